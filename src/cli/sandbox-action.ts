import { SANDBOX_LIVE_KEY, SANDBOX_TEST_KEY, startSandbox } from '../sandbox/index.js';
import type { SandboxOptions } from '../sandbox/index.js';
import { explainListenError } from './listen-options.js';

/** Starts the emulator and prints how to use it; it serves until SIGINT or SIGTERM. */
export async function runSandbox(options: SandboxOptions): Promise<void> {
  const sandbox = await startSandbox(options).catch((error: unknown) => {
    throw explainListenError(error, options.host ?? '127.0.0.1', options.port ?? 8787);
  });
  process.stdout.write(
    [
      `sandbox listening on ${sandbox.url}`,
      `  test key (fixtures, zero spend): ${SANDBOX_TEST_KEY}   (any svc_test_* key works)`,
      `  live key (billed against the balance): ${SANDBOX_LIVE_KEY}   (any svc_live_* key works)`,
      `  try: curl -s ${sandbox.url}/v1/profiles/enrich -H 'x-api-key: ${SANDBOX_TEST_KEY}' -H 'content-type: application/json' -d '{"url":"jane-doe"}'`,
      `  OpenAPI: ${sandbox.url}/openapi.json   admin: ${sandbox.url}/__sandbox/{clock,ledger,faults,deliveries}`,
      '',
    ].join('\n'),
  );
  const stop = () => void sandbox.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
