/**
 * Abuse suite, issue 10 item 2 (fake supply) and the token part of 14, on a coordinator with a market and
 * no dev minting, with fake signed node agents, on SQLite and on PostgreSQL:
 * - registration needs a provider's enrollment token: none, a bearer token, the old providerToken field,
 *   an unknown, revoked or expired enrollment are 401 with the fix; an enrollment token on a bearer route is 401;
 * - advertisements are bounded and consistent: 20 fake nodes claiming 64 H100s, 10⁶ cores or 10¹² MB are
 *   400 with problems, nothing stored, the supply unchanged; a GPU uuid another provider holds is 409;
 * - registrations are rate-limited per provider (429 with Retry-After), nodes capped per provider and per
 *   enrollment (429 LIMIT_EXCEEDED);
 * - revoking an enrollment with removeNodes: its nodes get 401, leave the supply, their job retries on
 *   another node and the ledger balances;
 * - bearer tokens: revoked or expired are 401; a buyer lists and revokes only its own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type NodeAdvertisementInput, WorkResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { cryptoRandom } from '../../src/random.js';
import { issueEnrollment, issueToken } from '../../src/tokens.js';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

const USDC = 1_000_000;
const H100 = 'nvidia-h100-80gb';
/** Only the removal test's nodes are of this class, so its supply is theirs alone. */
const L40S = 'nvidia-l40s-48gb';
const l40sAd = (host: string): NodeAdvertisementInput => {
  const ad = gpuAd(host);
  return { ...ad, gpus: ad.gpus.map((g) => ({ ...g, model: 'NVIDIA L40S', vramMb: 49_152 })) };
};
/** A clock two hours back: credentials made with it and a one-hour expiry are already expired. */
const past = { now: () => Date.now() - 2 * 3600_000 };

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function enrollmentAbuse(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`abuse: enrollment and tokens: ${name}`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    const get = (path: string, token: string) => call(h.url, 'GET', path, { token });
    const post = (path: string, body: unknown, token: string) => call(h.url, 'POST', path, { token, body });
    const nodeCount = async () => (await get('/v1/nodes', h.operator)).body.nodes.length as number;
    const treasuryBalanced = async () => {
      const t = (await get('/v1/treasury', h.operator)).body;
      return t.assets.every((a: { balanced: boolean }) => a.balanced);
    };
    /** Register without the harness's default enrollment: exactly this body. */
    const registerRaw = (agent: TestAgent, extra: Record<string, unknown>) =>
      agent.request('POST', '/v1/agent/register', { publicKey: agent.keys.publicKey, advertisement: agent.ad, ...extra });

    before(async () => {
      dbHandle = await database();
      h = await startHarness({ ...(dbHandle.db ? { db: dbHandle.db } : {}), market: true, devMint: false, marketEpochMs: 100, retryBaseBackoffMs: 50, retryMaxBackoffMs: 100 });
    });
    after(async () => {
      await h?.close();
      await dbHandle?.stop();
    });

    test('no credential, a bearer token, the old providerToken, an unknown token: 401 with the fix, nothing stored', async () => {
      const before = await nodeCount();
      const agent = new TestAgent(h.url);
      const none = await registerRaw(agent, {});
      assert.equal(none.status, 401, JSON.stringify(none.body));
      assert.equal(none.body.error.code, 'UNAUTHORIZED');
      assert.match(none.body.error.message, /needs an enrollment token.*gpux enrollment create/);
      const bearer = await registerRaw(agent, { enrollmentToken: h.provider });
      assert.equal(bearer.status, 401);
      assert.match(bearer.body.error.message, /bearer token cannot register nodes.*gpux enrollment create/);
      const legacy = await registerRaw(agent, { providerToken: h.provider });
      assert.equal(legacy.status, 401);
      assert.match(legacy.body.error.message, /providerToken is no longer accepted/);
      const unknown = await registerRaw(agent, { enrollmentToken: 'gpux_enroll_not-a-real-one' });
      assert.equal(unknown.status, 401);
      assert.match(unknown.body.error.message, /unknown enrollment token/);
      assert.equal(await nodeCount(), before);
      assert.equal((await agent.heartbeat()).status, 401, 'the node is unknown');
    });

    test('a revoked or expired enrollment registers no new node; an enrollment token on a bearer route is 401', async () => {
      const created = await post('/v1/enrollments', { name: 'soon revoked' }, h.provider);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.match(created.body.token, /^gpux_enroll_/);
      assert.equal(created.body.enrollment.accountId, h.providerId);
      const onBearer = await get('/v1/wallet', created.body.token);
      assert.equal(onBearer.status, 401);
      assert.match(onBearer.body.error.message, /enrollment token: it only registers nodes/);
      const kept = new TestAgent(h.url);
      assert.equal((await kept.register(undefined, created.body.token)).status, 200);
      const revoked = await post(`/v1/enrollments/${created.body.enrollment.id}/revoke`, {}, h.provider);
      assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
      assert.ok(revoked.body.enrollment.revokedAt > 0);
      assert.deepEqual(revoked.body.removedNodes, []);
      const before = await nodeCount();
      const late = await new TestAgent(h.url).register(undefined, created.body.token);
      assert.equal(late.status, 401);
      assert.match(late.body.error.message, /was revoked at .*gpux enrollment create/);
      // Without removeNodes the nodes it registered keep working, and may register again.
      assert.equal((await kept.heartbeat()).status, 200);
      assert.equal((await kept.register(undefined, created.body.token)).status, 200);

      const expired = await issueEnrollment(h.coord.store, { accountId: h.providerId, name: 'expired', expiresInSeconds: 3600 }, past, cryptoRandom);
      const tooLate = await new TestAgent(h.url).register(undefined, expired.token);
      assert.equal(tooLate.status, 401);
      assert.match(tooLate.body.error.message, /expired at /);
      assert.equal(await nodeCount(), before);
    });

    test('20 fake nodes claiming 64 H100s, 10⁶ cores, 10¹² MB: 400 with problems, nothing stored, no supply', async () => {
      const before = await nodeCount();
      const supplyBefore = (await get('/v1/market/prices', h.operator)).body.classes.find((c: { class: string }) => c.class === H100)?.supplyUnits ?? 0;
      const claims: Array<[Partial<NodeAdvertisementInput>, RegExp]> = [
        [{ gpus: gpuAd('fake', 64).gpus }, /^advertisement\.gpus$/],
        [{ cpuCores: 1_000_000 }, /^advertisement\.cpuCores$/],
        [{ memoryMb: 1e12 }, /^advertisement\.memoryMb$/],
        [{ gpus: gpuAd('fake', 1).gpus.map((g) => ({ ...g, vramMb: 16_384 })) }, /^advertisement\.gpus\.0\.vramMb$/],
        [{ gpus: gpuAd('fake', 2).gpus.map((g) => ({ ...g, index: 0 })) }, /^advertisement\.gpus\.1\.index$/],
        [{ gpus: gpuAd('fake', 2).gpus.map((g) => ({ ...g, uuid: 'GPU-same' })) }, /^advertisement\.gpus\.1\.uuid$/],
        [{ labels: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }, /^advertisement\.labels$/],
        [{ hostname: 'x'.repeat(300) }, /^advertisement\.hostname$/],
      ];
      for (let i = 0; i < 20; i++) {
        const [claim, path] = claims[i % claims.length]!;
        const fake = new TestAgent(h.url, { ...gpuAd(`fake-${i}`), ...claim });
        const res = await fake.register();
        assert.equal(res.status, 400, `${i}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error.code, 'REQUEST_INVALID');
        assert.ok(
          res.body.error.problems.some((p: { path: string }) => path.test(p.path)),
          `${i}: ${JSON.stringify(res.body.error.problems)}`,
        );
      }
      assert.equal(await nodeCount(), before);
      await new Promise((r) => setTimeout(r, 300)); // a few market epochs
      const supplyAfter = (await get('/v1/market/prices', h.operator)).body.classes.find((c: { class: string }) => c.class === H100)?.supplyUnits ?? 0;
      assert.ok(supplyAfter <= supplyBefore, `supply ${supplyBefore} → ${supplyAfter}`);
    });

    test("a GPU uuid held by another provider's node: 409 naming the uuid", async () => {
      const mine = new TestAgent(h.url);
      assert.equal((await mine.register()).status, 200);
      const uuid = mine.ad.gpus[0]!.uuid;
      const other = await issueToken(h.coord.store, { role: 'buyer', name: 'other provider' }, { now: () => Date.now() }, cryptoRandom);
      const thief = new TestAgent(h.url, { ...gpuAd('thief'), gpus: mine.ad.gpus });
      const res = await thief.register(undefined, other.token);
      assert.equal(res.status, 409, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'CONFLICT');
      assert.ok(res.body.error.message.includes(uuid));
      assert.equal((await get(`/v1/nodes/${thief.nodeId}`, h.operator)).status, 404, 'nothing stored');
      // The same provider may (a node that got a new key on the same machine).
      assert.equal((await new TestAgent(h.url, { ...gpuAd('again'), gpus: mine.ad.gpus }).register()).status, 200);
    });

    test('revoke with removeNodes: the nodes get 401, leave the supply, the job retries elsewhere, the ledger balances', async () => {
      const buyer = await h.buyer();
      const buyerId = (await get('/v1/whoami', buyer)).body.accountId;
      assert.equal((await post('/v1/wallet/deposits', { amount: 100 * USDC, accountId: h.providerId, reference: 'wire-p' }, h.operator)).status, 201);
      assert.equal((await post('/v1/wallet/deposits', { amount: 10 * USDC, accountId: buyerId, reference: 'wire-b' }, h.operator)).status, 201);
      const leaked = (await post('/v1/enrollments', { name: 'leaked' }, h.provider)).body;
      const doomed = new TestAgent(h.url, l40sAd('doomed'));
      assert.equal((await doomed.register(undefined, leaked.token)).status, 200);
      assert.equal((await post(`/v1/nodes/${doomed.nodeId}/stake`, { amount: 20 * USDC }, h.provider)).status, 200);
      const listed = (await get('/v1/enrollments', h.provider)).body.enrollments.find((e: { id: string }) => e.id === leaked.enrollment.id);
      assert.equal(listed.nodes, 1);

      const supplyOf = async (cls: string) => ((await get('/v1/market/prices', h.operator)).body.classes.find((c: { class: string }) => c.class === cls)?.supplyUnits ?? 0) as number;
      await waitFor(async () => {
        await doomed.heartbeat();
        return (await supplyOf(L40S)) === 1;
      }, 'the staked node is supply');
      const sub = await post('/v1/jobs', { spec: spec({ resources: { gpu: { count: 1, models: ['L40S'] } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC }) }, buyer);
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId = sub.body.job.id as string;
      const first = await waitFor(async () => {
        await doomed.heartbeat();
        const w = WorkResponse.parse((await doomed.work(300)).body);
        return w.assignments.find((a) => a.jobId === jobId);
      }, 'the doomed node takes the job');
      assert.equal((await doomed.start(first.attemptId)).status, 200);

      const res = await post(`/v1/enrollments/${leaked.enrollment.id}/revoke`, { removeNodes: true }, h.operator);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.removedNodes, [doomed.nodeId]);
      assert.equal(res.body.lostAttempts, 1);
      assert.equal(res.body.enrollment.nodes, 0);
      for (const r of [await doomed.heartbeat([first.attemptId]), await doomed.work(0), await doomed.result(first.attemptId, report('succeeded'))]) {
        assert.equal(r.status, 401, JSON.stringify(r.body));
        assert.match(r.body.error.message, /was removed at .*enrollment was revoked/);
      }
      assert.equal((await doomed.register(undefined, leaked.token)).status, 401, 'its revoked token registers it no more');
      // Out of the supply at once: the next epoch counts none of its class.
      await waitFor(async () => (await supplyOf(L40S)) === 0, 'the removed node leaves the supply');
      const node = (await get(`/v1/nodes/${doomed.nodeId}`, h.operator)).body.node;
      assert.equal(node.status, 'offline');
      assert.ok(node.removedAt > 0 && node.enrollmentId === leaked.enrollment.id);
      const events = (await get(`/v1/jobs/${jobId}`, buyer)).body;
      assert.ok(events.attempts.some((a: { id: string; state: string }) => a.id === first.attemptId && a.state === 'lost'), JSON.stringify(events.attempts));

      // Another node of the provider (its own enrollment) takes the job over and finishes it.
      const rescuer = new TestAgent(h.url, l40sAd('rescuer'));
      assert.equal((await rescuer.register()).status, 200);
      assert.equal((await post(`/v1/nodes/${rescuer.nodeId}/stake`, { amount: 20 * USDC }, h.provider)).status, 200);
      const second = await waitFor(async () => {
        await rescuer.heartbeat();
        const w = WorkResponse.parse((await rescuer.work(300)).body);
        return w.assignments.find((a) => a.jobId === jobId);
      }, 'the job retries on another node');
      assert.equal((await rescuer.start(second.attemptId)).status, 200);
      assert.equal((await rescuer.result(second.attemptId, report('succeeded'))).status, 200);
      await waitFor(async () => (await get(`/v1/jobs/${jobId}`, buyer)).body.job.state === 'succeeded', 'the job succeeds');
      const online = (await get('/v1/nodes?status=online', h.operator)).body.nodes as Array<{ id: string }>;
      assert.ok(!online.some((n) => n.id === doomed.nodeId), 'the removed node is not online');
      assert.ok(await treasuryBalanced());
    });

    test('revoked and expired bearer tokens are 401; a buyer lists and revokes only its own tokens', async () => {
      const buyer = await issueToken(h.coord.store, { role: 'buyer', name: 'b' }, { now: () => Date.now() }, cryptoRandom);
      const second = await post('/v1/tokens', { role: 'buyer', name: 'short-lived', expiresInSeconds: 3600 }, h.operator);
      assert.equal(second.status, 201, JSON.stringify(second.body));
      assert.ok(second.body.expiresAt > Date.now());
      const mine = (await get('/v1/tokens', buyer.token)).body.tokens;
      assert.deepEqual(
        mine.map((t: { id: string }) => t.id),
        [buyer.id],
      );
      assert.ok(!('hash' in mine[0]) && !('token' in mine[0]), 'no secrets listed');
      assert.equal((await get(`/v1/tokens?accountId=${second.body.accountId}`, buyer.token)).status, 403);
      assert.equal((await post(`/v1/tokens/${second.body.id}/revoke`, {}, buyer.token)).status, 404, "someone else's token reads as missing");
      const all = (await get('/v1/tokens?limit=1000', h.operator)).body.tokens.map((t: { id: string }) => t.id);
      assert.ok(all.includes(buyer.id) && all.includes(second.body.id));

      const revoked = await post(`/v1/tokens/${buyer.id}/revoke`, {}, buyer.token);
      assert.equal(revoked.status, 200);
      assert.ok(revoked.body.token.revokedAt > 0);
      const after = await get('/v1/wallet', buyer.token);
      assert.equal(after.status, 401);
      assert.match(after.body.error.message, /was revoked at /);

      const old = await issueToken(h.coord.store, { role: 'buyer', name: 'old', expiresInSeconds: 3600 }, past, cryptoRandom);
      const expired = await get('/v1/wallet', old.token);
      assert.equal(expired.status, 401);
      assert.match(expired.body.error.message, /expired at /);
      assert.equal((await post('/v1/enrollments', { name: 'x' }, old.token)).status, 401, 'nor can it enroll nodes');

      // Enrollments: a buyer sees and revokes only its own.
      const other = (await post('/v1/enrollments', { name: 'other' }, second.body.token)).body;
      assert.equal((await post(`/v1/enrollments/${other.enrollment.id}/revoke`, { removeNodes: true }, h.provider)).status, 404);
      const listed = (await get('/v1/enrollments', h.provider)).body.enrollments as Array<{ accountId: string }>;
      assert.ok(listed.length > 0 && listed.every((e) => e.accountId === h.providerId));
      assert.equal((await post('/v1/enrollments', { name: 'for another', accountId: second.body.accountId }, h.provider)).status, 403);
      const forIt = await post('/v1/enrollments', { name: 'by the operator', accountId: second.body.accountId }, h.operator);
      assert.equal(forIt.status, 201);
      assert.equal(forIt.body.enrollment.accountId, second.body.accountId);
      assert.equal((await post('/v1/enrollments', { name: 'typo', accountId: 'acct-nobody' }, h.operator)).status, 404);
      assert.ok(await treasuryBalanced());
    });
  });
}

enrollmentAbuse('SQLite', async () => ({ stop: async () => {} }));
enrollmentAbuse(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);

describe('abuse: registration floods, node and enrollment caps, removal across a restart', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ registerRatePerMin: 5, maxNodesPerProvider: 8 });
  });
  after(() => h?.close());

  test('registrations past the per-provider budget are 429 RATE_LIMITED with Retry-After; re-registrations count too', async () => {
    const agents = Array.from({ length: 5 }, (_, i) => new TestAgent(h.url, gpuAd(`flood-${i}`)));
    for (const a of agents) assert.equal((await a.register()).status, 200);
    const flood = await new TestAgent(h.url, gpuAd('flood-x')).register();
    assert.equal(flood.status, 429, JSON.stringify(flood.body));
    assert.equal(flood.body.error.code, 'RATE_LIMITED');
    assert.match(flood.body.error.message, /GPUX_REGISTER_RATE_PER_MIN/);
    assert.ok(Number(flood.headers.get('retry-after')) >= 1);
    const again = await agents[0]!.register();
    assert.equal(again.status, 429, 'a re-registration counts too');
    assert.equal((await call(h.url, 'GET', '/v1/nodes', { token: h.operator })).body.nodes.length, 5);
  });

  test("past an enrollment's maxNodes or the provider's cap: 429 LIMIT_EXCEEDED", async () => {
    const h2 = await startHarness({ maxNodesPerProvider: 3 });
    try {
      const capped = (await call(h2.url, 'POST', '/v1/enrollments', { token: h2.provider, body: { name: 'two', maxNodes: 2 } })).body.token as string;
      for (let i = 0; i < 2; i++) assert.equal((await new TestAgent(h2.url, gpuAd(`cap-${i}`)).register(undefined, capped)).status, 200);
      const third = await new TestAgent(h2.url, gpuAd('cap-2')).register(undefined, capped);
      assert.equal(third.status, 429);
      assert.equal(third.body.error.code, 'LIMIT_EXCEEDED');
      assert.match(third.body.error.message, /at most 2 nodes/);
      assert.equal((await new TestAgent(h2.url, gpuAd('cap-3')).register()).status, 200);
      const over = await new TestAgent(h2.url, gpuAd('cap-4')).register();
      assert.equal(over.status, 429);
      assert.equal(over.body.error.code, 'LIMIT_EXCEEDED');
      assert.match(over.body.error.message, /GPUX_MAX_NODES_PER_PROVIDER/);
      assert.equal((await call(h2.url, 'GET', '/v1/nodes', { token: h2.operator })).body.nodes.length, 3);
    } finally {
      await h2.close();
    }
  });

  test('at most 100 live enrollments per account: 429 LIMIT_EXCEEDED; revoking one makes room', async () => {
    const buyer = await h.buyer();
    let last = '';
    for (let i = 0; i < 100; i++) {
      const r = await call(h.url, 'POST', '/v1/enrollments', { token: buyer, body: { name: `e${i}` } });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      last = r.body.enrollment.id;
    }
    const over = await call(h.url, 'POST', '/v1/enrollments', { token: buyer, body: { name: 'one too many' } });
    assert.equal(over.status, 429);
    assert.equal(over.body.error.code, 'LIMIT_EXCEEDED');
    assert.match(over.body.error.message, /100 live enrollments.*gpux enrollment revoke/);
    assert.equal((await call(h.url, 'POST', `/v1/enrollments/${last}/revoke`, { token: buyer, body: {} })).status, 200);
    assert.equal((await call(h.url, 'POST', '/v1/enrollments', { token: buyer, body: { name: 'room again' } })).status, 201);
  });

  test('a removed node stays refused after a restart; a valid enrollment registers it again', async () => {
    const h3 = await startHarness();
    try {
      const e = (await call(h3.url, 'POST', '/v1/enrollments', { token: h3.provider, body: { name: 'gone' } })).body;
      const node = new TestAgent(h3.url, gpuAd('restarted'));
      assert.equal((await node.register(undefined, e.token)).status, 200);
      const revoked = await call(h3.url, 'POST', `/v1/enrollments/${e.enrollment.id}/revoke`, { token: h3.provider, body: { removeNodes: true } });
      assert.deepEqual(revoked.body.removedNodes, [node.nodeId]);
      await h3.restart();
      await new Promise((r) => setTimeout(r, 300)); // the client drops its sockets to the old server
      const hb = await node.heartbeat();
      assert.equal(hb.status, 401);
      assert.match(hb.body.error.message, /was removed at/);
      assert.equal((await node.register()).status, 200, "the provider's other enrollment restores it");
      assert.equal((await node.heartbeat()).status, 200);
      const view = (await call(h3.url, 'GET', `/v1/nodes/${node.nodeId}`, { token: h3.operator })).body.node;
      assert.equal(view.removedAt, null);
      assert.equal(view.status, 'online');
    } finally {
      await h3.close();
    }
  });
});
