/**
 * An observer told of every SQL statement the store runs, with its time (issue 14's diagnosis: `bench:dispatch
 * --diagnose` counts statements per job and where their time goes). It rides Kysely's query log, so a store
 * opened without one pays nothing.
 */
import type { LogConfig } from 'kysely';

/**
 * `sql`: the statement's text with placeholders; `ms`: from sending it to its result reaching the awaiting code. On
 * SQLite that is mostly the statement's execution (synchronous, on the event loop); on PostgreSQL the round trip to
 * the server, waits for row locks included.
 */
export type QueryObserver = (sql: string, ms: number) => void;

/** Kysely's `log` option for an observer; none without one. */
export function logConfigFor(onQuery: QueryObserver | undefined): { log?: LogConfig } {
  if (!onQuery) return {};
  return {
    log: (event) => {
      if (event.level === 'query') onQuery(event.query.sql, event.queryDurationMillis);
    },
  };
}
