/**
 * The bus over PostgreSQL LISTEN/NOTIFY: one connection of its own per replica listens on one channel and sends.
 * Messages published within a tick go out as one NOTIFY (payloads stay under PostgreSQL's 8000-byte limit), each
 * tagged with the sender so a replica skips its own. NOTIFY is delivered only to connected listeners: after a
 * reconnect the receiver is told there was a gap (onGap) and resyncs from the store.
 */
import type { Logger } from 'pino';
import pg from 'pg';
import type { ClusterBus } from './bus.js';
import { type ClusterMessage, messageKey, parseMessage } from './messages.js';

const CHANNEL = 'gpux_cluster';
/** Under PostgreSQL's 8000-byte payload limit, with room for the envelope. */
const MAX_PAYLOAD = 7000;
const MAX_BACKOFF_MS = 5000;

export function pgBus(url: string, replicaId: string, logger: Logger): ClusterBus {
  let client: pg.Client | null = null;
  let closed = false;
  let backoff = 100;
  let handlers: { onMessage: (m: ClusterMessage) => void; onGap: () => void } | null = null;
  let pending = new Map<string, ClusterMessage>();
  let flushScheduled = false;
  let connecting: Promise<void> | null = null;
  let connectedBefore = false;
  let sending: Promise<void> = Promise.resolve();

  const onNotification = (n: pg.Notification) => {
    if (n.channel !== CHANNEL || !n.payload || !handlers) return;
    let env: { from?: unknown; m?: unknown };
    try {
      env = JSON.parse(n.payload) as typeof env;
    } catch {
      return;
    }
    if (env.from === replicaId || !Array.isArray(env.m)) return;
    for (const raw of env.m) {
      const m = parseMessage(raw);
      if (m) handlers.onMessage(m);
    }
  };

  const connect = (): Promise<void> => {
    connecting ??= (async () => {
      while (!closed) {
        const c = new pg.Client({ connectionString: url });
        c.on('error', () => undefined); // 'end' follows; reconnect there
        try {
          await c.connect();
          await c.query(`listen ${CHANNEL}`);
        } catch (err) {
          await c.end().catch(() => undefined);
          logger.warn({ err: String(err), retryMs: backoff }, 'cluster bus: cannot reach PostgreSQL; retrying');
          await new Promise((r) => setTimeout(r, backoff).unref());
          backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
          continue;
        }
        backoff = 100;
        c.on('notification', onNotification);
        c.on('end', () => {
          if (client === c) client = null;
          if (!closed) {
            logger.warn('cluster bus: connection to PostgreSQL lost; reconnecting');
            // Deaf from now: long-polls parked here reread the store (a 503 moves their client on) instead of waiting blind.
            handlers?.onGap();
            void connect();
          }
        });
        client = c;
        return;
      }
    })().finally(() => {
      connecting = null;
    });
    return connecting.then(() => {
      // Whatever was sent while we were away is lost: the listener rereads the store.
      if (client && handlers && connectedBefore) handlers.onGap();
      if (client) connectedBefore = true;
    });
  };

  const flush = () => {
    flushScheduled = false;
    const batch = [...pending.values()];
    pending = new Map();
    const c = client;
    if (!c || batch.length === 0) return;
    // One statement at a time on the connection (pg deprecates queueing queries on one client).
    sending = sending.then(async () => {
      for (const part of payloads(batch, replicaId)) {
        await c.query('select pg_notify($1, $2)', [CHANNEL, part]).catch((err: unknown) => logger.debug({ err: String(err) }, 'cluster bus: notify failed (the receivers resync)'));
      }
    });
  };

  return {
    replicaId,
    publish(m) {
      if (closed) return;
      pending.set(messageKey(m), m);
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    },
    listen(h) {
      handlers = h;
      void connect();
    },
    async close() {
      closed = true;
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    },
  };
}

/** Envelopes of at most MAX_PAYLOAD bytes each. */
function payloads(batch: ClusterMessage[], from: string): string[] {
  const out: string[] = [];
  let part: ClusterMessage[] = [];
  let size = 0;
  for (const m of batch) {
    const len = JSON.stringify(m).length + 1;
    if (size + len > MAX_PAYLOAD && part.length > 0) {
      out.push(JSON.stringify({ from, m: part }));
      part = [];
      size = 0;
    }
    part.push(m);
    size += len;
  }
  if (part.length > 0) out.push(JSON.stringify({ from, m: part }));
  return out;
}
