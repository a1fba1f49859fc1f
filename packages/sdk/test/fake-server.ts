/** A tiny real node:http server for SDK tests: records requests and answers from a handler. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: URL;
  headers: IncomingMessage['headers'];
  body: unknown;
}

export type Handler = (req: RecordedRequest, res: ServerResponse, n: number) => void | Promise<void>;

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export async function startFakeServer(handler: Handler): Promise<{ url: string; requests: RecordedRequest[]; close(): Promise<void> }> {
  const requests: RecordedRequest[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const rec: RecordedRequest = { method: req.method ?? 'GET', url: new URL(req.url ?? '/', 'http://x'), headers: req.headers, body: text ? JSON.parse(text) : undefined };
    requests.push(rec);
    await handler(rec, res, requests.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function jobView(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'job-1',
    name: 'hello',
    buyerId: 'acc-1',
    state: 'queued',
    spec: { name: 'hello', image: 'busybox', command: ['sh', '-c', 'echo hi'] },
    attemptCount: 0,
    currentAttemptId: null,
    runAfter: null,
    exitCode: null,
    error: null,
    cancelRequested: false,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    startedAt: null,
    finishedAt: null,
    ...overrides,
  };
}

export function logEntry(cursor: number, data: string): Record<string, unknown> {
  return { seq: cursor, stream: 'stdout', data, at: 1_700_000_000_000 + cursor, attemptId: 'att-1', cursor };
}
