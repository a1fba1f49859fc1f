/** A replica that cannot reach PostgreSQL answers 503 UNAVAILABLE (clients move on to another replica), never 500. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type PostgresServer, requirePostgres, startPostgres } from '@gpux/testing';
import { isDatabaseUnreachable, isTransientConflict } from '../src/http/errors.js';
import { call, type Harness, startHarness } from './helpers.js';

test('connection failures and PostgreSQL shutdown codes read as unreachable; other errors do not', () => {
  const err = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});
  assert.equal(isDatabaseUnreachable(err('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')), true);
  assert.equal(isDatabaseUnreachable(err('Connection terminated unexpectedly')), true);
  assert.equal(isDatabaseUnreachable(err('terminating connection due to administrator command', '57P01')), true);
  assert.equal(isDatabaseUnreachable(err('connection failure', '08006')), true);
  assert.equal(isDatabaseUnreachable(err('duplicate key value violates unique constraint', '23505')), false);
  assert.equal(isDatabaseUnreachable(new TypeError('x is undefined')), false);
  // A deadlock victim or a serialization failure wrote nothing: 503, retried by every client, never a 500.
  assert.equal(isTransientConflict(err('deadlock detected', '40P01')), true);
  assert.equal(isTransientConflict(err('could not serialize access', '40001')), true);
  assert.equal(isTransientConflict(err('duplicate key value violates unique constraint', '23505')), false);
});

describe('a coordinator whose PostgreSQL is gone', requirePostgres(), () => {
  let server: PostgresServer;
  let h: Harness;
  before(async () => {
    server = await startPostgres();
    h = await startHarness({ db: await server.newDatabase() });
  });
  after(async () => {
    await h?.close().catch(() => undefined);
    await server?.stop().catch(() => undefined);
  });

  test('answers 503 UNAVAILABLE to a request that needs the database', async () => {
    const buyer = await h.buyer();
    assert.equal((await call(h.url, 'GET', '/v1/jobs', { token: buyer })).status, 200);
    await server.stop();
    const res = await call(h.url, 'GET', '/v1/jobs', { token: buyer });
    assert.equal(res.status, 503);
    assert.equal(res.body.error.code, 'UNAVAILABLE');
    assert.match(res.body.error.message, /cannot reach its database/);
  });
});
