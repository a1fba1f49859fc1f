/**
 * Named statements for PostgreSQL (issue 14): Kysely sends every query unnamed, so the server parses and plans
 * each one again, and the store's few hundred distinct statements run a dozen times per job. Named by their text,
 * a connection parses one once and the server may keep its plan: bench:dispatch measured the database's CPU per job
 * fall (see the note). Only statements with parameters are named (BEGIN, COMMIT and savepoints gain
 * nothing), and at most MAX_NAMED texts in all, so lists of varying length (`in ($1, $2, …)`) cannot grow the
 * server's per-connection statement cache without bound; later texts run unnamed as before.
 */
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';

/** Distinct statement texts that get a name (per process; each connection prepares those it runs). */
export const MAX_NAMED = 400;

/**
 * A prepared statement whose result columns changed under it (a replica of a newer version migrated the table):
 * the server refuses to run it again. That request fails once; the text then gets a new name, prepared afresh.
 */
function planChanged(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === '0A000' && typeof e.message === 'string' && e.message.includes('cached plan must not change result type');
}

/** Names are unique in the process, so two stores over one server never give one name to two texts. */
let made = 0;

export function namingStatements(pool: pg.Pool, maxNamed = MAX_NAMED): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < maxNamed) {
      name = `gpux_${made++}`;
      names.set(text, name);
    }
    return name;
  };
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      // A cursor (not used by the store) passes through as it came.
      const query = (text: unknown, values: unknown[]) => {
        if (typeof text !== 'string') return client.query(text as pg.QueryConfig);
        const name = values.length > 0 ? nameOf(text) : undefined;
        if (name === undefined) return client.query(text, values);
        return client.query({ name, text, values }).catch((err: unknown) => {
          if (planChanged(err) && names.get(text) === name) names.delete(text);
          throw err;
        });
      };
      return { query, release: (destroy?: boolean) => client.release(destroy) } as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}
