import type { LogicalType } from '../normalize/table-layout.js';

/**
 * Messages of the Airbyte protocol (docs.airbyte.com, "Airbyte Protocol"): one JSON object per
 * line on stdout. Only the fields seedline fills are typed here.
 */
export type AirbyteMessage =
  | {
      type: 'SPEC';
      spec: {
        documentationUrl: string;
        connectionSpecification: Record<string, unknown>;
        supportsIncremental: boolean;
        supported_destination_sync_modes: string[];
        protocol_version: string;
      };
    }
  | { type: 'CONNECTION_STATUS'; connectionStatus: { status: 'SUCCEEDED' | 'FAILED'; message?: string } }
  | { type: 'CATALOG'; catalog: { streams: AirbyteStream[] } }
  | { type: 'RECORD'; record: { stream: string; data: Record<string, unknown>; emitted_at: number } }
  | {
      type: 'STATE';
      state: {
        type: 'STREAM';
        stream: { stream_descriptor: { name: string }; stream_state: Record<string, unknown> };
        sourceStats?: { recordCount: number };
      };
    }
  | { type: 'LOG'; log: { level: 'FATAL' | 'ERROR' | 'WARN' | 'INFO' | 'DEBUG' | 'TRACE'; message: string } }
  | { type: 'TRACE'; trace: TraceMessage };

/** A stream of `discover`'s catalog. */
export interface AirbyteStream {
  name: string;
  json_schema: Record<string, unknown>;
  supported_sync_modes: ('full_refresh' | 'incremental')[];
  source_defined_cursor: boolean;
  default_cursor_field: string[];
  source_defined_primary_key: string[][];
  is_resumable: boolean;
}

type TraceMessage =
  | { type: 'ESTIMATE'; emitted_at: number; estimate: { name: string; type: 'STREAM'; row_estimate?: number } }
  | {
      type: 'STREAM_STATUS';
      emitted_at: number;
      stream_status: { stream_descriptor: { name: string }; status: 'STARTED' | 'RUNNING' | 'COMPLETE' | 'INCOMPLETE' };
    }
  | {
      type: 'ERROR';
      emitted_at: number;
      error: {
        message: string;
        internal_message?: string;
        failure_type: 'system_error' | 'config_error' | 'transient_error';
        stream_descriptor?: { name: string };
      };
    };

/** Writes messages to stdout, one line each. */
export function emit(message: AirbyteMessage): void {
  process.stdout.write(`${JSON.stringify(message, bigintAsNumber)}\n`);
}

/**
 * Emits one STREAM STATE a table, all carrying the same `stream_state`: it is serialized once, not
 * once a table (a compact ledger is up to a megabyte, and a stream may have many child tables).
 * Returns the length of the serialized state.
 */
export function emitStreamStates(
  stream_state: object,
  tables: readonly { name: string; recordCount: number }[],
): number {
  const blob = JSON.stringify(stream_state, bigintAsNumber);
  for (const { name, recordCount } of tables) {
    const descriptor = JSON.stringify({ name });
    process.stdout.write(
      `{"type":"STATE","state":{"type":"STREAM","stream":{"stream_descriptor":${descriptor},"stream_state":${blob}},"sourceStats":{"recordCount":${recordCount}}}}\n`,
    );
  }
  return blob.length;
}

function bigintAsNumber(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? Number(value) : value;
}

/** A stream's status as a TRACE message. */
export function streamStatus(name: string, status: 'STARTED' | 'RUNNING' | 'COMPLETE' | 'INCOMPLETE'): AirbyteMessage {
  return {
    type: 'TRACE',
    trace: { type: 'STREAM_STATUS', emitted_at: Date.now(), stream_status: { stream_descriptor: { name }, status } },
  };
}

/** An error as a TRACE message; `config_error` for what the user must fix, `transient_error` for what a retry may cure. */
export function errorTrace(
  message: string,
  failureType: 'system_error' | 'config_error' | 'transient_error',
  stream?: string,
): AirbyteMessage {
  return {
    type: 'TRACE',
    trace: {
      type: 'ERROR',
      emitted_at: Date.now(),
      error: { message, failure_type: failureType, ...(stream ? { stream_descriptor: { name: stream } } : {}) },
    },
  };
}

const JSON_TYPES: Record<LogicalType, Record<string, unknown>> = {
  text: { type: ['string', 'null'] },
  bigint: { type: ['integer', 'null'] },
  double: { type: ['number', 'null'] },
  boolean: { type: ['boolean', 'null'] },
  timestamp: { type: ['string', 'null'], format: 'date-time' },
  json: {},
};

/** The JSON Schema of a table's rows, from its columns (every column may be null). */
export function rowJsonSchema(columns: readonly { name: string; type: LogicalType }[]): Record<string, unknown> {
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    additionalProperties: true,
    properties: Object.fromEntries(columns.map((c) => [c.name, JSON_TYPES[c.type]])),
  };
}

/** Where seedline's own log lines go in protocol mode: LOG messages on stdout (levels as pino names them). */
export const logMessages = {
  write(line: string): void {
    const { level, msg } = JSON.parse(line) as { level: string; msg?: string };
    const mapped =
      ({ debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', fatal: 'FATAL' } as const)[level as 'info'] ??
      'INFO';
    emit({ type: 'LOG', log: { level: mapped, message: msg ?? '' } });
  },
};
