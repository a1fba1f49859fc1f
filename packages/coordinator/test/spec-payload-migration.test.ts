/**
 * Migration 0007 on a database written before it (SQLite): unfinished jobs get their spec split into the
 * scheduling view and spec_payload, finished ones keep their whole spec; both read back whole through
 * getJob, and the claims see the scheduling view of either layout.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { JobSpec } from '@gpux/protocol';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { resolvePolicy, resolveQuirks } from '../src/store/context.js';
import { MIGRATIONS, openSqliteStore, runMigrations } from '../src/store/index.js';
import type { Database } from '../src/store/schema.js';

const T0 = 1_700_000_000_000;

test('migration 0007 splits unfinished specs into view and payload; every layout reads back whole', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpux-0007-'));
  try {
    const file = join(dir, 'old.db');
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: new BetterSqlite3(file) }) });
    await runMigrations({ db, q: resolveQuirks({ dialect: 'sqlite' }), policy: resolvePolicy() }, MIGRATIONS.filter((m) => m.name < '0007'));
    const spec = (name: string) =>
      JobSpec.parse({
        name,
        image: 'busybox:1.36',
        command: ['sh', '-c', 'echo $X'],
        args: ['a'.repeat(5000)],
        env: { X: 'secret' },
        labels: { team: 'a' },
        inputs: [{ path: 'in.txt', content: 'i'.repeat(3000) }],
        resources: { gpu: { count: 2 }, cpuCores: 3 },
        priority: 'high',
      });
    for (const [id, state] of [
      ['job-queued', 'queued'],
      ['job-done', 'succeeded'],
    ] as const) {
      await sql`insert into jobs (id, buyer_id, name, state, spec, created_at, updated_at) values (${id}, 'buyer-1', ${id}, ${state}, ${JSON.stringify(spec(id))}, ${T0}, ${T0})`.execute(db);
    }
    await db.destroy();
    chmodSync(file, 0o600); // as the coordinator keeps its data

    const store = await openSqliteStore(file);
    try {
      for (const id of ['job-queued', 'job-done']) assert.deepEqual((await store.getJob(id))?.spec, spec(id), `${id} reads back whole`);
      const [claimed] = await store.claimQueued(T0 + 1, 10);
      assert.equal(claimed?.id, 'job-queued');
      assert.deepEqual([claimed?.spec.command, claimed?.spec.args, claimed?.spec.env, claimed?.spec.inputs, claimed?.spec.labels], [[], [], {}, [], {}]);
      assert.deepEqual([claimed?.spec.resources, claimed?.spec.priority], [spec('x').resources, 'high']);
    } finally {
      await store.close();
    }
    const raw = new BetterSqlite3(file, { readonly: true });
    const rows = raw.prepare('select id, spec, spec_payload from jobs order by id').all() as { id: string; spec: string; spec_payload: string | null }[];
    raw.close();
    const done = rows.find((r) => r.id === 'job-done');
    const queued = rows.find((r) => r.id === 'job-queued');
    assert.equal(done?.spec_payload, null, 'a finished job keeps its whole spec');
    assert.ok(queued?.spec_payload && !JSON.parse(queued.spec).command && JSON.parse(queued.spec_payload).env.X === 'secret', 'an unfinished job is split');
    assert.ok((queued?.spec.length ?? 0) < 400, 'the scheduling view is small');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
