/**
 * `gpux job verify` and `gpux node penalties` through main() against a real coordinator and a real node
 * agent (process executor): the real agent signs its result commitment; verify passes on the inline
 * outputs and on the files `gpux job result --out` wrote, and fails when a file there is tampered with.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadAgentConfig, ProcessExecutor, type RunningAgent, silentLogger, startAgent } from '@gpux/agent';
import { cryptoRandom, issueEnrollment, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { JobResultResponse } from '@gpux/protocol';
import { verifyJobResult } from '@gpux/sdk';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';

describe('gpux job verify', () => {
  let coord: RunningCoordinator;
  let agent: RunningAgent;
  let dir: string;
  let buyer: string;
  let provider: string;
  let jobId: string;
  const run = async (...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home') });
    const code = await main(argv(...args, '--coordinator', coord.url), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  const api = async (path: string, token: string, body?: unknown) => {
    const res = await fetch(`${coord.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: checked field by field
    return { status: res.status, body: (await res.json()) as any };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-cli-verify-'));
    const config = loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: false, heartbeatIntervalMs: 300 });
    coord = await startCoordinator(config);
    const p = await issueToken(coord.store, { role: 'buyer', name: 'provider' }, systemClock, cryptoRandom);
    provider = p.token;
    const enrollment = (await issueEnrollment(coord.store, { accountId: p.accountId, name: 'nodes' }, systemClock, cryptoRandom)).token;
    buyer = (await issueToken(coord.store, { role: 'buyer', name: 'buyer' }, systemClock, cryptoRandom)).token;
    const agentConfig = loadAgentConfig({}, { coordinatorUrl: coord.url, enrollmentToken: enrollment, dataDir: join(dir, 'node'), executor: 'process', allowUnsafeProcess: true, pollWaitMs: 2000 });
    const executor = new ProcessExecutor({ allowUnsafe: true, workRoot: join(dir, 'work'), killGraceMs: 500 });
    agent = await startAgent(agentConfig, { executor, logger: silentLogger, detect: { docker: { socketPath: join(dir, 'no-docker.sock') } } });
    const sub = await api('/v1/jobs', buyer, {
      spec: {
        name: 'verify-me',
        image: 'busybox',
        command: ['/bin/sh', '-c', 'cat "$GPUX_INPUTS/in.txt" > "$GPUX_OUTPUTS/out.txt"; mkdir -p "$GPUX_OUTPUTS/sub"; echo 42 > "$GPUX_OUTPUTS/sub/answer.txt"'],
        inputs: [{ path: 'in.txt', content: 'the input\n' }],
      },
    });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    jobId = sub.body.job.id;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const j = await api(`/v1/jobs/${jobId}`, buyer);
      if (j.body.job.state === 'succeeded') break;
      assert.ok(!['failed', 'cancelled'].includes(j.body.job.state), JSON.stringify(j.body));
      assert.ok(Date.now() < deadline, 'the job finishes');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => {
    await agent?.stop();
    await coord?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('passes on the inline outputs of a real job, naming the node and what was checked', async () => {
    const v = await run('job', 'verify', jobId, '--token', buyer);
    assert.equal(v.code, 0, v.err);
    assert.match(v.out, /signature\s+yes/);
    assert.match(v.out, /output root digest\s+yes/);
    assert.match(v.out, new RegExp(`verified: the outputs are what node ${agent.nodeId} committed to\\n`));
    assert.doesNotMatch(v.out, /correct/);
    const json = JSON.parse((await run('job', 'verify', jobId, '--json', '--token', buyer)).out);
    assert.equal(json.verified, true);
    assert.equal(json.nodeId, agent.nodeId);
  });

  test('checks the files `gpux job result --out` wrote, and fails when one is tampered with', async () => {
    const out = join(dir, 'out');
    assert.equal((await run('job', 'result', jobId, '--out', out, '--token', buyer)).code, 0);
    const ok = await run('job', 'verify', jobId, '--out', out, '--token', buyer);
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /2 file\(s\) hashed from the files given/);
    writeFileSync(join(out, 'sub', 'answer.txt'), '43\n');
    const bad = await run('job', 'verify', jobId, '--out', out, '--token', buyer);
    assert.notEqual(bad.code, 0);
    assert.match(bad.out, /output files\s+NO/);
    assert.match(bad.err, /NOT verified: output files, output root digest failed/);
    assert.doesNotMatch(bad.out, /^verified/m);
  });

  test('a result whose outputs or commitment were swapped is not verified (SDK)', async () => {
    const res = JobResultResponse.parse((await api(`/v1/jobs/${jobId}/result`, buyer)).body);
    assert.equal(verifyJobResult(res).verified, true);
    const swapped = { ...res, outputs: res.outputs.map((o) => ({ ...o, content: Buffer.from('forged').toString('base64') })) };
    assert.equal(verifyJobResult(swapped).verified, false);
    const c = res.commitment;
    assert.ok(c);
    const recommitted = { ...res, commitment: { ...c, exitCode: 1 }, exitCode: 1 };
    const r = verifyJobResult(recommitted);
    assert.equal(r.verified, false);
    assert.equal(r.checks.find((k) => k.name === 'signature')?.ok, false);
    assert.equal(verifyJobResult({ ...res, commitment: null }).verified, false);
  });

  test('gpux node penalties: none for an honest node; the provider sees them', async () => {
    const p = await run('node', 'penalties', agent.nodeId, '--token', provider);
    assert.equal(p.code, 0, p.err);
    assert.match(p.out, /banned:\s+no/);
    assert.match(p.out, /no penalties/);
    const stranger = await run('node', 'penalties', agent.nodeId, '--token', buyer);
    assert.notEqual(stranger.code, 0);
  });
});
