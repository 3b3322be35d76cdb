import { createServer, type Server } from 'node:http';

/** A request the recording proxy passed on. */
export interface SeenRequest {
  /** HTTP method, e.g. `PATCH`. */
  method: string;
  /** Path and query, e.g. `/v1/account`. */
  path: string;
  /** The raw body as text (empty for none). */
  body: string;
}

/** A loopback proxy in front of a sandbox: its URL, every request it passed on, and its server. */
export interface RecordingProxy {
  /** Base URL to give seedline instead of the sandbox's. */
  url: string;
  /** The requests seen so far, oldest first. */
  seen: SeenRequest[];
  /** Stops listening. */
  close(): Promise<void>;
}

/** Starts a proxy in front of `target` that records every request, so a test can read what seedline sent. */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const seen: SeenRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method ?? 'GET', path: req.url ?? '/', body: body.toString('utf8') });
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name)),
      ) as Record<string, string>;
      const answer = await fetch(`${target}${req.url}`, {
        method: req.method,
        headers,
        ...(body.length > 0 ? { body } : {}),
      });
      const passed = [...answer.headers].filter(
        ([name]) => !['content-encoding', 'transfer-encoding', 'content-length', 'connection'].includes(name),
      );
      res.writeHead(answer.status, Object.fromEntries(passed));
      res.end(Buffer.from(await answer.arrayBuffer()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
