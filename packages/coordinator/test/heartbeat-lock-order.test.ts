/**
 * Issue 14, PostgreSQL: a node's heartbeat renews its leases taking the attempt rows in id order, the order a group
 * of the node's carried starts takes them (services/work.ts). In heap order it could hold a later attempt while
 * waiting for an earlier one a start group held, and that group then wait for the later one: a deadlock, which
 * PostgreSQL breaks only after deadlock_timeout (a second), failing the heartbeat.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type PostgresServer, requirePostgres, startPostgres } from '@gpux/testing';
import pg from 'pg';
import { call, gpuAd, type Harness, spec, startHarness, TestAgent, waitFor } from './helpers.js';

describe('heartbeat lock order (PostgreSQL)', requirePostgres(), () => {
  let server: PostgresServer;
  let h: Harness;
  before(async () => {
    server = await startPostgres();
    h = await startHarness({ db: server.url });
  });
  after(async () => {
    await h?.close();
    await server?.stop();
  });

  test('a heartbeat waits behind a transaction holding the first of its attempts, holding none itself', async (t) => {
    const buyer = await h.buyer();
    const agent = new TestAgent(h.url, { ...gpuAd('lock-order', 2), labels: { test: 'lock-order' } });
    assert.equal((await agent.register()).status, 200);
    for (let i = 0; i < 2; i++) {
      const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ constraints: { nodeLabels: { test: 'lock-order' } } }) } });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
    }
    const ids = await waitFor(async () => {
      const w = (await agent.work(500)).body as { assignments: { attemptId: string }[] };
      return w.assignments.length === 2 ? w.assignments.map((a) => a.attemptId).sort() : undefined;
    }, 'two assignments');
    const [first, second] = ids as [string, string];
    const db = new pg.Client({ connectionString: server.url });
    await db.connect();
    t.after(() => db.end());
    // A new row version of the first attempt, after the second's (an indexed column changes, as every heartbeat
    // changes it): a scan, of the table or of the node's index, meets the second first.
    await db.query('update attempts set lease_expires_at = lease_expires_at + 1 where id = $1', [first]);
    await db.query('begin');
    await db.query('select id from attempts where id = $1 for update', [first]);
    const beat = agent.heartbeat(ids);
    await new Promise((r) => setTimeout(r, 300)); // the heartbeat is now waiting for the first attempt
    await db.query("set local statement_timeout = '5s'");
    await db.query('select id from attempts where id = $1 for update', [second]); // free: the heartbeat holds nothing
    await db.query('commit');
    const res = await beat;
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.cancel, [], 'both attempts are still the node’s');
  });
});
