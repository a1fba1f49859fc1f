/**
 * The provider's side against a real coordinator (issue 16): `gpux node start` prints readable log lines with
 * --log-format text (JSON by default into a pipe); `gpux node stake add` before any deposit says to deposit
 * first; `gpux provider status` shows the node, its stake, the asks and what a paid job earned.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cryptoRandom, issueEnrollment, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import type { ProviderStatusResponse } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';

const repoRoot = join(import.meta.dirname, '..', '..', '..');
const BIN = join(repoRoot, 'packages', 'cli', 'bin', 'gpux.js');
const USDC = 1_000_000;

/** The test's environment minus anything that would point the CLI elsewhere. */
function cliEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GPUX_HOME: home };
  for (const k of Object.keys(env)) if (k.startsWith('GPUX_') && k !== 'GPUX_HOME') delete env[k];
  return env;
}

/** Resolves when `pattern` shows up in what `read` returns, rejects when the child exits first or the deadline passes. */
function waitFor(child: ChildProcess, read: () => string, pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const m = read().match(pattern);
      if (m) done(() => resolve(m));
      else if (Date.now() > deadline) done(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${read()}`)));
    }, 50);
    const deadline = Date.now() + timeoutMs;
    const onExit = () => done(() => reject(new Error(`the agent exited before ${pattern}:\n${read()}`)));
    const done = (f: () => void) => {
      clearInterval(timer);
      child.off('exit', onExit);
      f();
    };
    child.on('exit', onExit);
  });
}

function startNode(home: string, coordUrl: string, enrollmentToken: string, dataDir: string, extra: string[]) {
  const child = spawn(process.execPath, [BIN, 'node', 'start', '--coordinator', coordUrl, '--enrollment-token', enrollmentToken, '--executor', 'simulated', '--data-dir', dataDir, ...extra], {
    cwd: repoRoot,
    env: cliEnv(home),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (b) => (stdout += b));
  child.stderr?.on('data', (b) => (stderr += b));
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGINT');
      setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
    });
  return { child, out: () => stdout, err: () => stderr, stop };
}

describe('the provider side, end to end', () => {
  let dir: string;
  let coord: RunningCoordinator;
  let providerToken: string;
  let providerAccount: string;
  let enrollmentToken: string;
  let nodeId: string;
  let node: ReturnType<typeof startNode> | undefined;
  const run = async (...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home') });
    const code = await main(argv(...args, '--coordinator', coord.url, '--token', providerToken), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-cli-provider-'));
    // verify off: pay reaches the wallet when the attempt settles, so "paid" is shown without waiting for a window.
    coord = await startCoordinator(
      loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: true, devMint: true, verify: false, challenge: 'off', heartbeatIntervalMs: 500 }),
    );
    const provider = await issueToken(coord.store, { role: 'buyer', name: 'provider' }, systemClock, cryptoRandom);
    providerToken = provider.token;
    providerAccount = provider.accountId;
    enrollmentToken = (await issueEnrollment(coord.store, { accountId: provider.accountId, name: 'rack' }, systemClock, cryptoRandom)).token;
  });
  after(async () => {
    await node?.stop();
    await coord?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('gpux node start: JSON lines into a pipe by default, readable lines with --log-format text', async () => {
    const json = startNode(join(dir, 'home'), coord.url, enrollmentToken, join(dir, 'node-json'), ['--name', 'json-node']);
    try {
      await waitFor(json.child, json.out, /^node (\S+) connected/m);
      await waitFor(json.child, json.err, /\n/);
      const first = json.err().split('\n')[0] ?? '';
      assert.equal(JSON.parse(first).component, 'agent', first);
    } finally {
      await json.stop();
    }
    const bad = await main(argv('node', 'start', '--log-format', 'pretty', '--enrollment-token', enrollmentToken), captureIo({ GPUX_HOME: join(dir, 'home') }));
    assert.equal(bad, 2, 'an unknown --log-format is a usage error');

    node = startNode(join(dir, 'home'), coord.url, enrollmentToken, join(dir, 'node'), ['--log-format', 'text', '--name', 'rig-1']);
    nodeId = (await waitFor(node.child, node.out, /^node (\S+) connected/m))[1] ?? '';
    const started = node;
    await waitFor(started.child, started.err, /\n/);
    const line = started.err().split('\n')[0] ?? '';
    assert.match(line, /^\d\d:\d\d:\d\d\.\d{3} (INFO |WARN |DEBUG|ERROR) \S/, line);
    assert.throws(() => JSON.parse(line), 'a text line is not JSON');
    assert.match(started.err(), / nodeId=\S+/);
  });

  test('stake before any deposit says to deposit first; then deposit, stake, ask', async () => {
    assert.ok(nodeId, 'the node started');
    const early = await run('node', 'stake', 'add', nodeId, '50');
    assert.equal(early.code, 1, early.out);
    assert.match(early.err, /insufficient funds/);
    assert.match(early.err, /deposit first: gpux wallet deposit AMOUNT/);
    const dep = await run('wallet', 'deposit', '100');
    assert.equal(dep.code, 0, dep.err);
    const staked = await run('node', 'stake', 'add', nodeId, '50');
    assert.equal(staked.code, 0, staked.err);
    const ask = await run('node', 'price', 'set', 'cpu', '0.01');
    assert.equal(ask.code, 0, ask.err);
  });

  test('gpux provider status: the node, its stake, the asks, and what a paid job earned', async () => {
    assert.ok(nodeId, 'the node started');
    const buyerToken = (await issueToken(coord.store, { role: 'buyer', name: 'buyer' }, systemClock, cryptoRandom)).token;
    const buyer = new GpuxClient({ url: coord.url, token: buyerToken });
    await buyer.deposit({ asset: 'usdc', amount: 1000 * USDC });
    const { job } = await buyer.submitJob({ name: 'paid', image: 'busybox', command: ['true'], env: { GPUX_SIM_SECONDS: '1' }, resources: { gpu: { count: 0 } }, timeoutSeconds: 60 }).catch((e) => assert.fail(JSON.stringify(e.problems ?? e.message)));
    const done = await buyer.waitForJob(job.id, { pollMs: 200, signal: AbortSignal.timeout(60_000) });
    assert.equal(done.state, 'succeeded', JSON.stringify(done));

    const status = await run('provider', 'status');
    assert.equal(status.code, 0, status.err);
    const o = status.out;
    assert.match(o, /^market: +on$/m);
    assert.match(o, /^nodes \(2\):$/m, 'the stopped JSON-logging node is listed too, offline');
    assert.match(o, /^hint: node \S+ is offline \(last heartbeat .*\): start its agent again with `gpux node start`$/m);
    assert.match(o, new RegExp(`^${nodeId} +online +\\d+/\\d+ +\\S.* +50\\.000000 +0\\.000000 +[1-9.0-9]+ USDC +`, 'm'));
    assert.match(o, new RegExp(`^${nodeId} .* skipped +50\\.000000 `, 'm'), 'PROVEN: the proof state (the challenge is off here)');
    assert.match(o, /^cpu +0\.010000 /m, 'the ask is listed');
    assert.match(o, /^USDC +0\.0\d*[1-9]\d* +0\.000000 +0 +- +/m, 'paid shows what the job earned');
    assert.doesNotMatch(o, new RegExp(`hint: node ${nodeId} has no free stake`));

    const json = await run('provider', 'status', '-o', 'json');
    const body = JSON.parse(json.out) as ProviderStatusResponse;
    const mine = body.nodes.find((n) => n.node.id === nodeId);
    assert.equal(mine?.stake.staked, 50 * USDC);
    const usdc = body.earnings.find((e) => e.asset === 'usdc');
    assert.ok(usdc && usdc.paid > 0, JSON.stringify(body.earnings));
    assert.equal(mine?.paid[0]?.amount, usdc?.paid, 'the node earned all of it');
    assert.equal(usdc?.available, 50 * USDC + usdc.paid, 'the wallet: 100 deposited, 50 staked, plus the pay');
  });

  test('a new account: no nodes, and how to add one', async () => {
    const other = (await issueToken(coord.store, { role: 'buyer', name: 'newcomer' }, systemClock, cryptoRandom)).token;
    const io = captureIo({ GPUX_HOME: join(dir, 'home') });
    assert.equal(await main(argv('provider', 'status', '--coordinator', coord.url, '--token', other), io), 0, io.stderr());
    assert.match(io.stdout(), /^nodes \(0\):\nnone$/m);
    assert.match(io.stdout(), /hint: no nodes yet: `gpux enrollment create --name NAME`/);
    assert.match(io.stdout(), /no asks: set one with `gpux node price set CLASS PRICE`/);
    // Only operators read someone else's: a buyer naming another account is refused, an operator is answered.
    await assert.rejects(new GpuxClient({ url: coord.url, token: other }).providerStatus({ accountId: providerAccount }), (e: { status?: number }) => e.status === 403);
    const asOperator = await new GpuxClient({ url: coord.url, token: coord.bootstrapOperatorToken ?? '' }).providerStatus({ accountId: providerAccount });
    assert.equal(asOperator.accountId, providerAccount);
    assert.ok(asOperator.nodes.some((n) => n.node.id === nodeId));
  });
});
