/**
 * What a PostgreSQL phase's connections wait for (`--diagnose`): pg_stat_activity sampled every 100 ms while the
 * jobs go through. A connection is counted as waiting for a lock (by the statement that waits: which row is hot),
 * in a transaction waiting for the coordinator's next statement (the coordinator's round trip, its event loop),
 * running, or waiting on I/O; idle connections are not counted. The means say where the transactions' time goes:
 * 7 of 10 connections waiting on one statement's lock is a row every job takes in turn.
 */
import type pg from 'pg';

export interface DbWaits {
  samples: number;
  /** Mean connections per sample in each state, most first. */
  mean: Array<{ what: string; connections: number }>;
}

export interface WaitWatch {
  stop(): Promise<DbWaits>;
}

interface Activity {
  state: string | null;
  wait_event_type: string | null;
  wait_event: string | null;
  query: string | null;
}

/** The first words of a statement, enough to name its table: `insert into "fee_carry"`. */
function statementHead(query: string | null): string {
  const words = (query ?? '').replace(/\s+/g, ' ').trim().split(' ');
  const cut = words.findIndex((w, i) => i > 0 && w.startsWith('"'));
  return words.slice(0, cut >= 0 ? cut + 1 : 4).join(' ');
}

function stateOf(a: Activity): string | null {
  if (a.wait_event_type === 'Lock') return `lock wait: ${statementHead(a.query)}`;
  if (a.state === 'idle in transaction') return 'in a transaction, waiting for the coordinator';
  if (a.state !== 'active') return null;
  if (a.wait_event_type === null) return 'running';
  if (a.wait_event_type === 'Client') return 'reading from the coordinator';
  return `${a.wait_event_type}: ${a.wait_event}`;
}

export function watchWaits(admin: pg.Client, database: string, everyMs: number): WaitWatch {
  const counts = new Map<string, number>();
  let samples = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      // A sample that fails (the cluster is stopping) ends the sampling; the phase's own errors say why.
      const res = await admin
        .query<Activity>('SELECT state, wait_event_type, wait_event, query FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database])
        .catch(() => null);
      if (!res) return;
      samples++;
      for (const a of res.rows) {
        const what = stateOf(a);
        if (what) counts.set(what, (counts.get(what) ?? 0) + 1);
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      const mean = [...counts.entries()]
        .map(([what, n]) => ({ what, connections: Math.round((100 * n) / Math.max(1, samples)) / 100 }))
        .sort((x, y) => y.connections - x.connections);
      return { samples, mean };
    },
  };
}
