/**
 * The migration runner: applies pending numbered migrations in one write transaction, recording each in
 * gpux_migrations. On PostgreSQL a transaction-scoped advisory lock makes concurrent starts safe: the
 * second coordinator waits, then finds everything applied.
 */
import { type Kysely, sql } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import { MIGRATIONS, type Migration } from './migrations/index.js';

/** Arbitrary constant naming gpux's migration lock among advisory locks. */
const PG_MIGRATION_LOCK = 0x67707578; // "gpux"

export async function runMigrations(ctx: StoreContext, migrations: readonly Migration[] = MIGRATIONS): Promise<string[]> {
  return inTx(ctx, async (trx) => {
    if (ctx.q.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${sql.lit(PG_MIGRATION_LOCK)})`.execute(trx);
    await trx.schema
      .createTable('gpux_migrations')
      .ifNotExists()
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('applied_at', 'bigint', (c) => c.notNull())
      .execute();
    const done = new Set((await trx.selectFrom('gpux_migrations').select('name').execute()).map((r) => r.name));
    const applied: string[] = [];
    for (const m of [...migrations].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (done.has(m.name)) continue;
      await m.up(trx as unknown as Kysely<unknown>, ctx.q.dialect);
      await trx.insertInto('gpux_migrations').values({ name: m.name, applied_at: Date.now() }).execute();
      applied.push(m.name);
    }
    return applied;
  });
}
