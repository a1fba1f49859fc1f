/**
 * Verification in the terminal (issue 11): `gpux job dispute` (which route, which body, what is printed, a
 * refusal's message) against a canned HTTP server, and the verification label in `job get`, `job list` and
 * the `job submit --wait` summary.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import type { GetJobResponse, JobView, VerificationView } from '@gpux/protocol';
import { formatJobDetail, jobColumns, summarizeJob } from '../src/job-format.js';
import { main } from '../src/main.js';
import { formatTable } from '../src/output.js';
import { argv, captureIo, tempDir } from './helpers.js';
import { AT } from './money-fixtures.js';

const verification = (o: Partial<VerificationView> = {}): VerificationView => ({
  state: 'window',
  label: 'sampled-out',
  summary: 'not audited (audited with probability p = 10%), backed by stake 20.000000 USDC, disputable until 2024-01-09T03:04:05.000Z',
  attemptId: 'att-1',
  nodeId: 'node-1',
  p: 0.1,
  draw: 0.42,
  reason: 'sampled-out',
  windowClosesAt: AT + 7 * 86_400_000,
  checks: [],
  dispute: null,
  verdict: null,
  resolvedAt: null,
  ...o,
});

const job = (o: Partial<JobView> = {}): JobView => ({
  id: 'job-1',
  name: 'train',
  buyerId: 'acc-1',
  state: 'succeeded',
  spec: { name: 'train', image: 'busybox', command: ['true'], args: [], env: {}, inputs: [], resources: { gpu: { count: 1 } }, timeoutSeconds: 60, maxRetries: 0 } as never,
  attemptCount: 1,
  currentAttemptId: 'att-1',
  runAfter: null,
  exitCode: 0,
  error: null,
  cancelRequested: false,
  createdAt: AT,
  updatedAt: AT,
  startedAt: AT,
  finishedAt: AT + 1000,
  verification: verification(),
  ...o,
});

async function coordinator(t: TestContext, answer: (path: string, body: unknown) => [number, unknown]) {
  const seen: Array<{ method: string; path: string; body: unknown; auth: string | undefined }> = [];
  const server = createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const body = text ? JSON.parse(text) : undefined;
    seen.push({ method: req.method ?? 'GET', path, body, auth: req.headers.authorization });
    const [status, out] = answer(path, body);
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(out));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const env = { GPUX_HOME: tempDir(t), GPUX_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, GPUX_TOKEN: 'buyer-tok' };
  const run = async (...args: string[]) => {
    const io = captureIo(env);
    const code = await main(argv(...args), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  return { seen, run };
}

describe('gpux job dispute', () => {
  test('posts the reason with the buyer token and prints the bond and the new label', async (t) => {
    const disputed = verification({ state: 'refereeing', label: 'disputed', summary: 'disputed by the buyer; a referee run decides', dispute: { reason: 'empty output', bond: 20_000_000, asset: 'usdc', at: AT } });
    const { seen, run } = await coordinator(t, () => [200, { verification: disputed, bond: 20_000_000, asset: 'usdc' }]);
    const r = await run('job', 'dispute', 'job-1', '--reason', '  empty output ');
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(seen, [{ method: 'POST', path: '/v1/jobs/job-1/dispute', body: { reason: 'empty output' }, auth: 'Bearer buyer-tok' }]);
    assert.match(r.out, /bond held:\s+20\.000000 USDC \(returned if the result was wrong; paid to the node if not\)/);
    assert.match(r.out, /verification:\s+disputed: disputed by the buyer; a referee run decides/);
    const json = await run('job', 'dispute', 'job-1', '--reason', 'x', '--json');
    assert.equal(JSON.parse(json.out).bond, 20_000_000);
  });

  test("the coordinator's refusal is printed as it said it; a missing or empty reason is a usage error before any request", async (t) => {
    const message = 'the dispute window of job job-1 closed at 2024-01-09T03:04:05.000Z; a result can only be disputed before then';
    const { seen, run } = await coordinator(t, () => [409, { error: { code: 'CONFLICT', message } }]);
    const closed = await run('job', 'dispute', 'job-1', '--reason', 'late');
    assert.equal(closed.code, 1);
    assert.ok(closed.err.includes(message), closed.err);
    const n = seen.length;
    assert.equal((await run('job', 'dispute', 'job-1')).code, 2);
    assert.equal((await run('job', 'dispute', 'job-1', '--reason', '   ')).code, 2);
    assert.equal(seen.length, n, 'no request sent');
  });
});

describe('verification labels in the terminal', () => {
  test('job get prints the label with its summary and until when it is disputable', () => {
    const res: GetJobResponse = { job: job(), attempts: [], events: [], moreEventsBefore: null, nodeEventsElided: 0 };
    const out = formatJobDetail(res);
    assert.match(out, /verification:\s+sampled-out: not audited \(audited with probability p = 10%\), backed by stake/);
    assert.match(out, /disputable until:\s+\S+.*\(gpux job dispute job-1 --reason TEXT\)/);
    const decided = formatJobDetail({ ...res, job: job({ verification: verification({ state: 'released', label: 'dispute-rejected', summary: 'a referee run agreed with the node', checks: [{ kind: 'referee', state: 'succeeded', agreed: true }], dispute: { reason: 'no', bond: 1, asset: 'usdc', at: AT }, verdict: 'the referee agreed with the node' }) }) });
    assert.doesNotMatch(decided, /disputable until/);
    assert.match(decided, /checks:\s+referee succeeded \(agreed\)/);
    assert.match(decided, /verdict:\s+the referee agreed with the node/);
    const none = formatJobDetail({ ...res, job: job({ state: 'running', verification: null }) });
    assert.doesNotMatch(none, /verification/);
  });

  test('job list has a VERIFICATION column with the short label; the wait summary adds the verification line', () => {
    const table = formatTable([job(), job({ id: 'job-2', state: 'queued', verification: null })], jobColumns(AT));
    const [header, first, second] = table.split('\n');
    assert.match(header ?? '', /VERIFICATION$/);
    assert.match(first ?? '', /sampled-out$/);
    assert.match(second ?? '', /-$/);
    assert.equal(summarizeJob(job()).split('\n')[1], `verification: sampled-out: ${verification().summary}`);
    assert.equal(summarizeJob(job({ verification: null })).includes('\n'), false);
  });
});
