import { open } from 'node:fs/promises';
import type { AccountSecret } from '../signals/account-webhook.js';
import type { SignalSecret } from '../signals/signal-apply.js';
import { UsageError } from './run-command.js';

/**
 * Appends secrets as JSON lines to a file only its owner can read: created 0600, and an existing
 * file shared with others or owned by another user is refused before anything is written.
 */
export async function appendSecrets(path: string, secrets: readonly (SignalSecret | AccountSecret)[]): Promise<void> {
  const file = await open(path, 'a', 0o600);
  try {
    const { mode, uid } = await file.stat();
    if (typeof process.getuid === 'function' && uid !== process.getuid()) {
      throw new UsageError(`the secrets file ${path} belongs to another user: give a file of your own`);
    }
    if ((mode & 0o077) !== 0) await file.chmod(0o600);
    await file.appendFile(secrets.map((s) => `${JSON.stringify(s)}\n`).join(''));
  } finally {
    await file.close();
  }
}
