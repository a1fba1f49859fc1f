/** What `bench:nodes` reads beside the HTTP figures: process memory, and node and job counts straight from the database. */
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';

/** Resident memory of a process in bytes (Linux /proc), or null where unreadable. */
export function processRssBytes(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

export interface DbProbe {
  onlineNodes(): Promise<number>;
  /** Jobs placed at least once (an assignment the node never takes up sends its job back to the queue: count attempts, not states). */
  placedJobs(): Promise<number>;
  /** Per job, ms from its creation to its first attempt: queue wait plus the scheduling pass that placed it. */
  placementDelays(): Promise<number[]>;
  close(): Promise<void>;
}

const DELAYS = 'SELECT min(a.created_at) - j.created_at AS ms FROM jobs j JOIN attempts a ON a.job_id = j.id GROUP BY j.id, j.created_at';

/** A read-only look at the coordinator's database: a pg client, or SQLite opened read-only (WAL: it never blocks the writer). */
export async function openDbProbe(db: string): Promise<DbProbe> {
  if (db.startsWith('sqlite:')) {
    const file = new Database(db.slice('sqlite:'.length), { readonly: true, fileMustExist: true });
    const count = (sql: string) => Number((file.prepare(sql).get() as { n: number }).n);
    return {
      onlineNodes: async () => count(`SELECT count(*) AS n FROM nodes WHERE status = 'online'`),
      placedJobs: async () => count('SELECT count(DISTINCT job_id) AS n FROM attempts'),
      placementDelays: async () => (file.prepare(DELAYS).all() as { ms: number }[]).map((r) => Number(r.ms)),
      close: async () => {
        file.close();
      },
    };
  }
  const client = new pg.Client({ connectionString: db });
  await client.connect();
  const count = async (sql: string) => Number((await client.query<{ n: string }>(sql)).rows[0]?.n ?? 0);
  return {
    onlineNodes: () => count(`SELECT count(*) AS n FROM nodes WHERE status = 'online'`),
    placedJobs: () => count('SELECT count(DISTINCT job_id) AS n FROM attempts'),
    placementDelays: async () => (await client.query<{ ms: string }>(DELAYS)).rows.map((r) => Number(r.ms)),
    close: () => client.end(),
  };
}
