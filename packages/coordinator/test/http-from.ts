/**
 * One HTTP(S) request from a chosen local address: every 127.x.y.z is loopback on Linux, so a test can play
 * several clients on one machine and see which address the coordinator (or a proxy in front of it) sees.
 * A fresh connection per call (agent: false), so one client's socket is never reused for another.
 */
import http from 'node:http';
import https from 'node:https';
import type { Res } from './helpers.js';

export interface FromOptions {
  /** The source address, e.g. 127.0.0.2. */
  from: string;
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** CA bundle (PEM) for https URLs. */
  ca?: Buffer;
}

export function callFrom(url: string, method: string, path: string, o: FromOptions): Promise<Res> {
  const target = new URL(path, url);
  const headers: Record<string, string> = { ...o.headers };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  const body = o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
  if (body !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(body));
  }
  const lib = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(target, { method, headers, localAddress: o.from, agent: false, ...(o.ca ? { ca: o.ca } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {}
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
        resolve({ status: res.statusCode ?? 0, body: parsed, headers: h });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}
