import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RateLimiterStats } from '../client/index.js';
import type { Destination } from '../destinations/destination.js';
import type { FleetStore } from '../destinations/fleet-store.js';
import { quoteIdentifier } from '../destinations/identifiers.js';
import { ListenError, type MetricsAddress } from './listen-options.js';
import { openSession } from './open-session.js';
import { SeedlineMetrics, type MetricsSources } from './seedline-metrics.js';

/** A listening `/metrics` endpoint. */
export interface MetricsServer {
  /** `http://host:port/metrics`. */
  url: string;
  /** Stops listening. */
  close(): Promise<void>;
}

/**
 * Serves `metrics` at `/metrics` on `address` (anything else is 404), and prints
 * `metrics: <url>` on stdout once it listens, so a supervisor given port 0 learns the port.
 */
export async function startMetricsServer(metrics: SeedlineMetrics, address: MetricsAddress): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the metrics are at /metrics\n');
      return;
    }
    metrics.text().then(
      (text) => response.writeHead(200, { 'content-type': metrics.contentType }).end(text),
      (error: unknown) =>
        response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${(error as Error).message}\n`),
    );
  });
  await listen(server, address).catch((error: unknown) => {
    const cause = (error as { code?: unknown } | null)?.code ?? (error as Error).message;
    throw new ListenError(
      `Cannot listen for --metrics on ${address.host}:${address.port} (${String(cause)}): pick another [host:]port, e.g. --metrics 0 for a free port on 127.0.0.1.`,
      { cause: error },
    );
  });
  const { port } = server.address() as AddressInfo;
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  const url = `http://${host}:${port}/metrics`;
  process.stdout.write(`metrics: ${url}\n`);
  return {
    url,
    close: () => new Promise<void>((done) => server.close(() => done()).closeAllConnections()),
  };
}

function listen(server: Server, { host, port }: MetricsAddress): Promise<void> {
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      done();
    });
  });
}

/** The metrics of a command and their endpoint. */
export interface CommandMetrics {
  /** What runs are counted in. */
  metrics: SeedlineMetrics;
  /** The `/metrics` endpoint serving them. */
  server: MetricsServer;
  /** Stops the endpoint. */
  close(): Promise<void>;
}

/** Starts `/metrics` for a command, reading on scrape from `sources`. */
export async function startCommandMetrics(address: MetricsAddress, sources: MetricsSources): Promise<CommandMetrics> {
  const metrics = new SeedlineMetrics(sources);
  const server = await startMetricsServer(metrics, address);
  return { metrics, server, close: () => server.close() };
}

/**
 * `/metrics` of `seedline worker`: its key's calls counted from its limiter, its leases and the
 * warehouse read through its open destination on each scrape.
 */
export async function startWorkerMetrics(
  address: MetricsAddress,
  worker: {
    destination: Destination;
    fleet: FleetStore;
    workerId: string;
    /** Each key the worker calls with, and the limiter its calls go through. */
    keys: readonly { keyId: string; limiter: { readonly stats: RateLimiterStats } }[];
  },
): Promise<CommandMetrics> {
  const { destination, fleet, workerId } = worker;
  const started = await startCommandMetrics(address, {
    readWarehouse: (sql) => destination.readQuery(sql(quoteIdentifier(destination.schema, 'schema'))),
    leases: async () => (await fleet.listWorkers()).find((w) => w.workerId === workerId)?.leases ?? 0,
  });
  for (const key of worker.keys) started.metrics.track(key.keyId, key.limiter);
  return started;
}

/**
 * Reads the warehouse of `configPath` for a scrape of `schedule` or `serve`, which hold no
 * destination between runs: opened for the read, then closed. While a run holds a DuckDB file
 * the read fails and the gauges keep their last values.
 */
export function warehouseReader(configPath: string): NonNullable<MetricsSources['readWarehouse']> {
  return async (sql) => {
    const session = await openSession(configPath, { mustExist: true });
    try {
      return await session.destination.readQuery(sql(quoteIdentifier(session.destination.schema, 'schema')));
    } finally {
      await session.close();
    }
  };
}
