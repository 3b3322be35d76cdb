/** Writes one line to stderr: the default `log` of long-running parts (receiver, spool, scheduler). */
export function stderrLine(line: string): void {
  process.stderr.write(`${line}\n`);
}
