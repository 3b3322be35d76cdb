/**
 * Single-enrich throughput of the sandbox over loopback with zero latency.
 * The sandbox runs in a child process (as it would beside a connector under test); this process only
 * generates load over keep-alive connections. Prints requests/s.
 *
 *   npx tsx bench/sandbox.ts [--seconds 5] [--connections 64]
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { startSandbox } from '../src/sandbox/index.js';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

async function serve(): Promise<void> {
  const sandbox = await startSandbox({ rpm: 1_000_000_000 });
  process.stdout.write(`${sandbox.url}\n`);
}

async function startChild(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--serve'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    child.once('exit', (code) => reject(new Error(`sandbox exited with ${code}`)));
  });
  return { url, stop: () => child.kill() };
}

async function bench(): Promise<void> {
  const seconds = flag('seconds', 5);
  const connections = flag('connections', 64);
  const { url, stop } = await startChild();
  const pool = new Pool(url, { connections, pipelining: 1 });
  const headers = { 'x-api-key': 'svc_test_bench', 'content-type': 'application/json' };
  let done = 0;
  let failed = 0;
  const one = async (i: number) => {
    const res = await pool.request({
      method: 'POST',
      path: '/v1/profiles/enrich',
      headers,
      body: JSON.stringify({ url: `bench-person-${i % 5000}` }),
    });
    await res.body.arrayBuffer();
    if (res.statusCode === 200) done++;
    else failed++;
  };
  // Warm-up (JIT, connections).
  await Promise.all(Array.from({ length: 2000 }, (_, i) => one(i)));
  done = 0;
  failed = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let counter = 0;
  await Promise.all(
    Array.from({ length: connections * 2 }, async () => {
      while (performance.now() < deadline) await one(counter++);
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  await pool.close();
  stop();
  process.stdout.write(
    `sandbox single-enrich: ${Math.round(done / elapsed)} requests/s (${done} ok, ${failed} failed, ${connections} keep-alive connections, ${elapsed.toFixed(1)} s, zero latency, loopback)\n`,
  );
}

if (process.argv.includes('--serve')) await serve();
else await bench();
