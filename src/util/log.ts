import { pino, type DestinationStream, type Level, type Logger } from 'pino';
import { redactSecrets } from './redact-secrets.js';
import { wrapForTerminal } from './wrap-text.js';

/** `plain`: the lines people read (a warning starts `warning: `); `json`: one pino JSON object per line for machines. */
export type LogFormat = 'plain' | 'json';

/** The levels `--log-level` takes, least to most severe. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/** How seedline logs; set once by the CLI before a command runs. */
export interface LogSettings {
  /** Default: `plain`. */
  format?: LogFormat;
  /** Lines below this level are dropped. Default: `info`. */
  level?: (typeof LOG_LEVELS)[number];
  /** Where lines go. Default: stderr (stdout is kept for a command's data). */
  destination?: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
}

/**
 * Fields whose values are secrets wherever they appear in a log line's fields: the config's
 * `api.api_key`, webhook secrets, tokens, passwords and Authorization headers.
 */
const SECRET_PATHS = [
  'api_key',
  'apiKey',
  'secret',
  'webhook_secret',
  'token',
  'password',
  'authorization',
  'headers.authorization',
].flatMap((key) => [key, `*.${key}`]);

/** Values known to be secret (the configured API key, webhook secrets, a Postgres password): redacted in every message. */
const knownSecrets = new Set<string>();

let root = build({});
let currentFormat: LogFormat = 'plain';
let currentLevel: LogSettings['level'] = 'info';

/** Sets format, level and destination of every later line; a level not given stays as it was. */
export function configureLog(settings: LogSettings): void {
  currentLevel = settings.level ?? currentLevel;
  root = build({ ...settings, level: currentLevel });
  currentFormat = settings.format ?? 'plain';
}

/** The format lines are written in now (a progress display draws bars only for `plain` on a terminal). */
export function logFormat(): LogFormat {
  return currentFormat;
}

/** Adds values that must never appear in a line (configured keys and secrets); short ones are ignored. */
export function registerSecrets(values: readonly (string | undefined)[]): void {
  for (const value of values) if (value && value.length >= 4) knownSecrets.add(value);
}

/** Fields of a line, machine-readable in the `json` format (stream, run, counts); the plain format shows only the message. */
export type LogFields = Record<string, unknown>;

/** seedline's logger: levelled lines on stderr, secrets redacted from messages and fields. */
export const log = {
  debug: (message: string, fields: LogFields = {}) => root.debug(fields, message),
  info: (message: string, fields: LogFields = {}) => root.info(fields, message),
  warn: (message: string, fields: LogFields = {}) => root.warn(fields, message),
  error: (message: string, fields: LogFields = {}) => root.error(fields, message),
};

/**
 * The `log` callback of parts that take one line at a time (receiver, spool, scheduler): a line
 * starting `warning: ` is logged as a warning (without the prefix, which the plain format adds back).
 */
export function logLine(line: string): void {
  if (line.startsWith('warning: ')) log.warn(line.slice('warning: '.length));
  else log.info(line);
}

function build(settings: LogSettings): Logger {
  const out = settings.destination ?? process.stderr;
  return pino(
    {
      level: settings.level ?? 'info',
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (fields) =>
          Object.fromEntries(
            Object.entries(fields).map(([key, value]) => [key, typeof value === 'string' ? redact(value) : value]),
          ),
      },
      redact: { paths: SECRET_PATHS, censor: '[redacted]' },
      hooks: {
        logMethod(args, method) {
          method.apply(
            this,
            args.map((arg) => (typeof arg === 'string' ? redact(arg) : arg)) as Parameters<typeof method>,
          );
        },
      },
    },
    settings.format === 'json' ? jsonDestination(out) : plainDestination(out),
  );
}

/** `text` with the registered secrets and anything shaped like a key, token or webhook secret replaced by `[redacted]`. */
export function redact(text: string): string {
  return redactSecrets(text, [...knownSecrets]);
}

/** Each JSON line written at once (synchronously when it is a file descriptor), so a line logged just before exit is not lost. */
function jsonDestination(out: NodeJS.WritableStream): DestinationStream {
  return out === process.stderr
    ? pino.destination({ fd: 2, sync: true })
    : { write: (line: string) => void out.write(line) };
}

const PREFIX: Partial<Record<Level, string>> = {
  debug: 'debug: ',
  warn: 'warning: ',
  error: 'error: ',
  fatal: 'error: ',
};

/** The message alone, prefixed by its level when it is not `info`, wrapped to the terminal's width. */
function plainDestination(out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }): DestinationStream {
  return {
    write(line: string) {
      const { level, msg } = JSON.parse(line) as { level: Level; msg?: string };
      out.write(`${wrapForTerminal(`${PREFIX[level] ?? ''}${msg ?? ''}`, out as NodeJS.WriteStream)}\n`);
    },
  };
}
