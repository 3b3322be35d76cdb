import { readFile, stat } from 'node:fs/promises';
import { logLine } from '../util/log.js';

/** Options of {@link WebhookSecrets}. */
export interface WebhookSecretsOptions {
  /** Secrets from the config (`webhooks.secrets`): the account's, hand-configured ones, rotations. Default: none. */
  fixed?: readonly string[];
  /** The JSON-lines file `signals apply --secrets-out` appends `{ id, site_url, webhook_secret }` to. Default: none. */
  file?: string;
  /** Where one-line warnings go (never a secret). Default: stderr. */
  log?: (line: string) => void;
}

/** One line of the secrets file: a Signal's secret, by the Signal's id when the line names it. */
export interface SecretLine {
  /** The Signal's id (`id`); absent when the line names none. */
  id?: string;
  /** Its `webhook_secret`. */
  secret: string;
}

/**
 * The secrets a delivery may be signed with: the config's, plus each Signal's from the file
 * `signals apply` keeps them in. The file is read again whenever it changes, so Signals created
 * while `serve` runs verify without a restart. For one delivery only a few are tried (see
 * {@link WebhookSecrets.forBody}), so a large file does not make each request cost thousands of
 * HMACs.
 *
 * @example
 * ```ts
 * const secrets = new WebhookSecrets({ fixed: config.webhooks.secrets, file: '/srv/seedline/signal-secrets.jsonl' });
 * verifyWebhook({ header, rawBody, secrets: await secrets.forBody(rawBody) });
 * ```
 */
export class WebhookSecrets {
  private bySignal = new Map<string, string[]>();
  private unkeyed: string[] = [];
  private version = '';
  private reloading: Promise<void> | undefined;
  private readonly log: (line: string) => void;

  constructor(private readonly options: WebhookSecretsOptions) {
    this.log = options.log ?? logLine;
  }

  /** Every secret as of now (the file re-read when its size or modification time changed). */
  async current(): Promise<readonly string[]> {
    await this.refresh();
    return [...(this.options.fixed ?? []), ...this.unkeyed, ...[...this.bySignal.values()].flat()];
  }

  /**
   * The secrets worth trying for one raw, not yet verified body: the config's, file lines that
   * name no Signal, and the file's secrets of the Signal the body names (`trigger.signal_id`,
   * `signal_id` or `signal.id`). The body only picks the candidates: nothing in it is trusted
   * until one of them verifies it, and a body naming another Signal than its signer's fails.
   */
  async forBody(rawBody: string): Promise<readonly string[]> {
    await this.refresh();
    const signal = claimedSignalId(rawBody);
    // The reload this call joined may have read the file before a just-applied Signal's line landed: look once more.
    if (signal !== undefined && !this.bySignal.has(signal)) await this.refresh();
    return [
      ...(this.options.fixed ?? []),
      ...this.unkeyed,
      ...((signal === undefined ? undefined : this.bySignal.get(signal)) ?? []),
    ];
  }

  /**
   * Brings the secrets up to date with the file. Concurrent callers share one reload, and the
   * secrets in force are replaced only once the new ones are read: a delivery arriving mid-reload
   * is checked against the old ones, and a failed read (EMFILE) leaves them and their version as
   * they were, so the next request tries the read again.
   */
  private refresh(): Promise<void> {
    const { file } = this.options;
    if (file === undefined) return Promise.resolve();
    this.reloading ??= this.reload(file).finally(() => (this.reloading = undefined));
    return this.reloading;
  }

  private async reload(file: string): Promise<void> {
    const { version, mode } = await fileVersion(file);
    if (version === this.version) return;
    if (version === 'missing') {
      this.swap(version, new Map(), []);
      this.log(
        `webhooks.secrets_file ${file} does not exist (yet): only webhooks.secrets verify deliveries; run \`seedline signals apply --secrets-out ${file}\` to fill it`,
      );
      return;
    }
    if ((mode & 0o077) !== 0)
      this.log(
        `warning: webhooks.secrets_file ${file} is readable by others (mode ${(mode & 0o777).toString(8)}): chmod 600 it`,
      );
    const bySignal = new Map<string, string[]>();
    const unkeyed: string[] = [];
    for (const { id, secret } of parseSecretsFile(await readFile(file, 'utf8'), file, this.log)) {
      if (id === undefined) unkeyed.push(secret);
      else bySignal.set(id, [...(bySignal.get(id) ?? []), secret]);
    }
    this.swap(version, bySignal, unkeyed);
  }

  private swap(version: string, bySignal: Map<string, string[]>, unkeyed: string[]): void {
    this.version = version;
    this.bySignal = bySignal;
    this.unkeyed = unkeyed;
  }
}

/**
 * The file's version (size and modification time; `missing` when there is no file) and mode. Any
 * other failure (EACCES, EIO) is thrown: the request fails and the secrets read before stay.
 */
async function fileVersion(file: string): Promise<{ version: string; mode: number }> {
  try {
    const info = await stat(file);
    return { version: `${info.size}:${info.mtimeMs}`, mode: info.mode };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return { version: 'missing', mode: 0 };
  }
}

/** The `id` and `webhook_secret` of each JSON line; a bad line is reported by number, never quoted. */
export function parseSecretsFile(text: string, file: string, log: (line: string) => void): SecretLine[] {
  const secrets: SecretLine[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    try {
      const { id, webhook_secret: secret } = JSON.parse(line) as { id?: unknown; webhook_secret?: unknown };
      if (typeof secret === 'string' && secret.length > 0)
        return void secrets.push(typeof id === 'string' && id.length > 0 ? { id, secret } : { secret });
    } catch {
      // Reported below without the line's content, which holds a secret.
    }
    log(`warning: ${file} line ${index + 1} is not {"id", "webhook_secret"} JSON: skipped`);
  });
  return secrets;
}

/** The Signal id an unverified body names, if any: it only picks which secrets to try. */
export function claimedSignalId(rawBody: string): string | undefined {
  let body: { trigger?: { signal_id?: unknown } | null; signal_id?: unknown; signal?: { id?: unknown } | null } | null;
  try {
    body = JSON.parse(rawBody) as typeof body;
  } catch {
    return undefined;
  }
  if (body === null || typeof body !== 'object') return undefined;
  const id = body.trigger?.signal_id ?? body.signal_id ?? body.signal?.id;
  return typeof id === 'string' ? id : undefined;
}
