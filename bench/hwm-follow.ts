/**
 * Follows a process's peak RSS (`VmHWM` of `/proc/PID/status`) every few milliseconds and prints
 * each rise as a JSON line: `{ t, hwm, rss, anon, file }` (ms since the epoch, then MB). A sampler
 * inside the process (`SEEDS_MEMORY_TRACE`, every 500 ms) misses rises shorter than its interval;
 * the `t` of each rise lines up with that trace's statements to tell what ran at the peak.
 *
 *   node dist/bench/hwm-follow.js PID [--every-ms 3] > rises.jsonl
 *
 * Ends when the process does.
 */
import { readFileSync } from 'node:fs';

const pid = Number(process.argv[2]);
if (!Number.isInteger(pid) || pid <= 0) {
  process.stderr.write('usage: node dist/bench/hwm-follow.js PID [--every-ms 3]\n');
  process.exit(2);
}
const everyAt = process.argv.indexOf('--every-ms');
const everyMs = everyAt >= 0 ? Number(process.argv[everyAt + 1]) : 3;

/** A field of `/proc/PID/status` in MB (the kernel gives kB). */
function megabytes(status: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return match ? Math.round(Number(match[1]) / 1024) : 0;
}

let highest = 0;
const timer = setInterval(() => {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    clearInterval(timer);
    return;
  }
  const hwm = megabytes(status, 'VmHWM');
  if (hwm <= highest) return;
  highest = hwm;
  const line = {
    t: Date.now(),
    hwm,
    rss: megabytes(status, 'VmRSS'),
    anon: megabytes(status, 'RssAnon'),
    file: megabytes(status, 'RssFile'),
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}, everyMs);
