/**
 * The baseline of `bench:nodes`, a child process: a bare HTTP server that does what the protocol costs
 * without the store. It verifies every node signature (ed25519 over the canonical request, the timestamp
 * window, a nonce cache with the coordinator's TTL), parses the body, and answers a heartbeat-shaped JSON.
 * Registration only remembers the public key. Prints { url } on stdout; exits when stdin ends.
 */
import { createServer } from 'node:http';
import type { KeyObject } from 'node:crypto';
import { MAX_CLOCK_SKEW_MS, nodeIdFromPublicKey, publicKeyFromRaw, ROUTES, SIGNATURE_HEADERS, verifySignature } from '@gpux/protocol';

const intervalMs = Number(process.argv[2] ?? 5000);
const keys = new Map<string, KeyObject>();
const nonces = new Map<string, number>();
let lastSweep = 0;

function claimNonce(key: string, now: number): boolean {
  if (now - lastSweep >= 1000) {
    lastSweep = now;
    for (const [k, exp] of nonces) {
      if (exp > now) break;
      nonces.delete(k);
    }
  }
  if (nonces.has(key)) return false;
  nonces.set(key, now + 2 * MAX_CLOCK_SKEW_MS);
  return true;
}

function h(headers: NodeJS.Dict<string | string[]>, name: string): string {
  const v = headers[name];
  return typeof v === 'string' ? v : '';
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const reply = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    const raw = Buffer.concat(chunks);
    const now = Date.now();
    let parsed: { publicKey?: string };
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      return reply(400, { error: 'body is not JSON' });
    }
    const nodeId = h(req.headers, SIGNATURE_HEADERS.node);
    const timestamp = Number(h(req.headers, SIGNATURE_HEADERS.timestamp));
    const nonce = h(req.headers, SIGNATURE_HEADERS.nonce);
    if (Math.abs(now - timestamp) > MAX_CLOCK_SKEW_MS) return reply(401, { error: 'timestamp' });
    let key = keys.get(nodeId);
    if (req.url === ROUTES.register.path) {
      if (typeof parsed.publicKey !== 'string' || nodeIdFromPublicKey(parsed.publicKey) !== nodeId) return reply(401, { error: 'publicKey' });
      key = publicKeyFromRaw(parsed.publicKey);
    }
    if (!key) return reply(401, { error: 'unknown node' });
    const parts = { method: req.method ?? 'POST', path: req.url ?? '', body: raw, nodeId, timestamp, nonce };
    if (!verifySignature(parts, h(req.headers, SIGNATURE_HEADERS.signature), key)) return reply(401, { error: 'signature' });
    if (!claimNonce(`${nodeId}\n${nonce}`, now)) return reply(401, { error: 'replay' });
    if (req.url === ROUTES.register.path) {
      keys.set(nodeId, key);
      return reply(200, { nodeId, heartbeatIntervalMs: intervalMs, leaseTtlMs: 3 * intervalMs, serverTime: now });
    }
    reply(200, { cancel: [], heartbeatIntervalMs: intervalMs, serverTime: now });
  });
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no address');
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${addr.port}` })}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
