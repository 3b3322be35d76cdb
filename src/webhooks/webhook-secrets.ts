import { readFile, stat } from 'node:fs/promises';

/** Options of {@link WebhookSecrets}. */
export interface WebhookSecretsOptions {
  /** Secrets from the config (`webhooks.secrets`): the account's, hand-configured ones, rotations. Default: none. */
  fixed?: readonly string[];
  /** The JSON-lines file `signals apply --secrets-out` appends `{ id, site_url, webhook_secret }` to. Default: none. */
  file?: string;
  /** Where one-line warnings go (never a secret). Default: stderr. */
  log?: (line: string) => void;
}

/**
 * Every secret a delivery may be signed with: the config's, plus each Signal's from the file
 * `signals apply` keeps them in. The file is read again whenever it changes, so Signals created
 * while `serve` runs verify without a restart.
 *
 * @example
 * ```ts
 * const secrets = new WebhookSecrets({ fixed: config.webhooks.secrets, file: '/srv/seedline/signal-secrets.jsonl' });
 * verifyWebhook({ header, rawBody, secrets: await secrets.current() });
 * ```
 */
export class WebhookSecrets {
  private fromFile: string[] = [];
  private version = '';
  private readonly log: (line: string) => void;

  constructor(private readonly options: WebhookSecretsOptions) {
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  }

  /** The secrets as of now (the file re-read when its size or modification time changed). */
  async current(): Promise<readonly string[]> {
    const fixed = this.options.fixed ?? [];
    if (this.options.file === undefined) return fixed;
    await this.refresh(this.options.file);
    return [...fixed, ...this.fromFile];
  }

  private async refresh(file: string): Promise<void> {
    let version: string;
    let mode = 0;
    try {
      const info = await stat(file);
      version = `${info.size}:${info.mtimeMs}`;
      mode = info.mode;
    } catch {
      version = 'missing';
    }
    if (version === this.version) return;
    this.version = version;
    if (version === 'missing') {
      this.fromFile = [];
      this.log(`webhooks.secrets_file ${file} does not exist (yet): only webhooks.secrets verify deliveries; run \`seedline signals apply --secrets-out ${file}\` to fill it`);
      return;
    }
    if ((mode & 0o077) !== 0) this.log(`warning: webhooks.secrets_file ${file} is readable by others (mode ${(mode & 0o777).toString(8)}): chmod 600 it`);
    this.fromFile = parseSecretsFile(await readFile(file, 'utf8'), file, this.log);
  }
}

/** The `webhook_secret` of each JSON line; a bad line is reported by number, never quoted. */
export function parseSecretsFile(text: string, file: string, log: (line: string) => void): string[] {
  const secrets: string[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    try {
      const secret = (JSON.parse(line) as { webhook_secret?: unknown }).webhook_secret;
      if (typeof secret === 'string' && secret.length > 0) return void secrets.push(secret);
    } catch {
      // Reported below without the line's content, which holds a secret.
    }
    log(`warning: ${file} line ${index + 1} is not {"id", "webhook_secret"} JSON: skipped`);
  });
  return secrets;
}
