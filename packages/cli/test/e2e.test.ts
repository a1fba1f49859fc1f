/** End to end: the real `gpux` binary as child processes — `gpux dev`, then job commands against it, then Ctrl-C. */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { tempDir } from './helpers.js';

const repoRoot = join(import.meta.dirname, '..', '..', '..');
const BIN = join(repoRoot, 'packages', 'cli', 'bin', 'gpux.js');
const ready = existsSync(join(repoRoot, 'packages', 'coordinator', 'src', 'index.ts')) && existsSync(join(repoRoot, 'packages', 'agent', 'src', 'index.ts'));

/** The test's own environment minus anything that would point the CLI elsewhere. */
function cliEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GPUX_HOME: home };
  for (const k of Object.keys(env)) if (k.startsWith('GPUX_') && k !== 'GPUX_HOME') delete env[k];
  return env;
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function gpux(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b) => (stdout += b));
    child.stderr.on('data', (b) => (stderr += b));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const show = (r: Run) => `exit ${r.code ?? r.signal}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

/** Resolves with the first match of `pattern` on the child's stdout, or rejects when it exits or the deadline passes. */
function waitForOutput(child: ChildProcess, pattern: RegExp, output: () => string, timeoutMs = 120_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = output().match(pattern);
      if (m) {
        cleanup();
        resolve(m);
      }
    };
    const onExit = () => {
      cleanup();
      reject(new Error(`gpux dev exited before printing ${pattern}:\n${output()}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${output()}`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      child.off('exit', onExit);
    };
    child.stdout?.on('data', check);
    child.on('exit', onExit);
    check();
  });
}

describe('gpux end to end', { skip: ready ? false : 'the coordinator and agent packages are not there yet' }, () => {
  test('gpux dev --exit-after-sample runs the sample job to success and exits 0', async (t) => {
    const home = tempDir(t);
    const dataDir = tempDir(t);
    const r = await gpux(['dev', '--data-dir', dataDir, '--port', '0', '--exit-after-sample'], cliEnv(home));
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^coordinator: http:\/\/127\.0\.0\.1:\d+$/m, show(r));
    assert.match(r.stdout, /^sample job \S+ succeeded \(exit code 0\); output digest [0-9a-f]{64}$/m, show(r));
    assert.match(r.stdout, /hello from gpux job/, 'the sample job logs are printed');
    assert.match(r.stdout, /^executor: (docker \(engine \S+ reachable at \S+\)|process \(.+; jobs run as host processes\))$/m);
    const profile = JSON.parse(readFileSync(join(home, 'profile.json'), 'utf8'));
    assert.match(profile.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(profile.token, /^gpux_/);
    assert.match(profile.operatorToken, /^gpux_/);
    assert.ok(existsSync(join(dataDir, 'coordinator', 'coordinator.db')), 'state stays in --data-dir');
  });

  test('job commands against a running gpux dev, then Ctrl-C stops it cleanly', async (t) => {
    const home = tempDir(t);
    const outDir = join(tempDir(t), 'out');
    const dataDir = tempDir(t); // removed by the test even if gpux dev had to be killed
    const env = cliEnv(home);
    // Epochs every 300 ms, so `market prices` has readings within the test.
    const devEnv = { ...env, GPUX_MARKET_EPOCH_MS: '300' };
    const dev = spawn(process.execPath, [BIN, 'dev', '--port', '0', '--data-dir', dataDir, '--no-sample-job'], { cwd: repoRoot, env: devEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let devOut = '';
    let devErr = '';
    dev.stdout.on('data', (b) => (devOut += b));
    dev.stderr.on('data', (b) => (devErr += b));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => dev.on('exit', (code, signal) => resolve({ code, signal })));
    t.after(() => {
      if (dev.exitCode === null && dev.signalCode === null) dev.kill('SIGKILL');
    });

    await waitForOutput(dev, /^gpux dev is running/m, () => devOut);
    const url = devOut.match(/^coordinator: (\S+)$/m)?.[1];
    assert.ok(url, devOut);

    const submit = await gpux(['job', 'submit', 'examples/hello.yaml', '--wait', '--json'], env);
    assert.equal(submit.code, 0, show(submit));
    const { job, created } = JSON.parse(submit.stdout);
    assert.equal(created, true);
    assert.equal(job.state, 'succeeded', show(submit));
    assert.equal(job.exitCode, 0);

    const list = await gpux(['job', 'list', '--json'], env);
    assert.equal(list.code, 0, show(list));
    assert.ok(JSON.parse(list.stdout).jobs.some((j: { id: string }) => j.id === job.id), show(list));

    const logs = await gpux(['job', 'logs', job.id], env);
    assert.equal(logs.code, 0, show(logs));
    assert.match(logs.stdout, new RegExp(`hello from job ${job.id}\\n`));
    assert.match(logs.stdout, /^done$/m);
    assert.match(logs.stderr, /reading 3 names/, 'stderr of the job goes to stderr');

    const result = await gpux(['job', 'result', job.id, '--out', outDir], env);
    assert.equal(result.code, 0, show(result));
    assert.match(result.stdout, /wrote 1 file\(s\)/);
    assert.equal(readFileSync(join(outDir, 'greetings.txt'), 'utf8'), 'hello, Ada\nhello, Grace\nhello, Linus\n');

    const nodes = await gpux(['node', 'list', '--json'], env);
    assert.equal(nodes.code, 0, show(nodes));
    assert.equal(JSON.parse(nodes.stdout).nodes.length, 1);

    // The money side of the same job, through the CLI: its bill, the buyer's wallet, the index, payouts.
    const bill = await gpux(['job', 'bill', job.id, '--json'], env);
    assert.equal(bill.code, 0, show(bill));
    const b = JSON.parse(bill.stdout);
    assert.equal(b.market, true);
    assert.ok(b.charged > 0 && b.held === b.charged + b.refunded && b.inEscrow === 0, show(bill));
    assert.deepEqual(
      b.lines.map((l: { kind: string }) => l.kind),
      ['escrow.hold', 'settlement', 'settlement', 'escrow.release'].filter((_, i) => i !== 1 || b.fee > 0),
    );
    const billText = await gpux(['job', 'bill', job.id], env);
    assert.match(billText.stdout, /^charged: +0\.\d{6} USDC$/m, show(billText));

    const balance = await gpux(['wallet', 'balance', '--json'], env);
    const usdc = JSON.parse(balance.stdout).balances.find((x: { asset: string }) => x.asset === 'usdc');
    assert.equal(usdc.available, 1000_000_000 - b.charged, show(balance));

    const minted = await gpux(['wallet', 'deposit', '2.5'], env);
    assert.equal(minted.code, 0, show(minted));
    const withdraw = await gpux(['wallet', 'withdraw', '1', '--to', 'iban:TEST', '--json'], env);
    assert.equal(withdraw.code, 0, show(withdraw));
    const payoutId = JSON.parse(withdraw.stdout).payout.id;
    const pending = await gpux(['payout', 'list', '--state', 'pending'], env);
    assert.match(pending.stdout, new RegExp(payoutId), show(pending));
    const completed = await gpux(['payout', 'complete', payoutId, '--reference', 'bank-tx-42'], env);
    assert.equal(completed.code, 0, show(completed));
    const after = JSON.parse((await gpux(['wallet', 'balance', '--json'], env)).stdout).balances.find((x: { asset: string }) => x.asset === 'usdc');
    assert.equal(after.available, 1000_000_000 - b.charged + 1_500_000);

    const tooPrecise = await gpux(['wallet', 'deposit', '1.0000001'], env);
    assert.equal(tooPrecise.code, 2, show(tooPrecise));
    assert.match(tooPrecise.stderr, /7 decimals but USDC has 6/);

    const prices = await gpux(['market', 'prices'], env);
    assert.equal(prices.code, 0, show(prices));
    assert.match(prices.stdout, /^cpu +\d+\.\d{6} USDC/m, show(prices));

    dev.kill('SIGINT');
    const end = await exited;
    assert.deepEqual(end, { code: 0, signal: null }, `${devOut}\n${devErr}`);
    assert.match(devOut, /SIGINT: stopping the local network/);
  });
});
