/**
 * `gpux run`, Ctrl-C while watching a job, `job logs` on a queued job and the order of stdout and stderr: the real
 * CLI against a real `gpux dev` whose node runs the jobs in Docker (issue 16).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { JobView } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { requireDocker } from '@gpux/testing';
import { Command } from 'commander';
import { parseMaxPrice, registerRun, type RunDeps, runExitCode, runSpec } from '../src/commands/run.js';
import { CliError } from '../src/errors.js';
import { type DevNetwork, jobIdOf, show, startDevNetwork } from './dev-network.js';
import { captureIo, tempDir } from './helpers.js';

describe('gpux run: flags to a spec', () => {
  test('the command after --, env, GPUs, models, price and inputs become the spec; the name comes from the image', (t) => {
    const dir = tempDir(t);
    const file = join(dir, 'data.csv');
    writeFileSync(file, 'a,b\n');
    const { spec, localInputs } = runSpec('pytorch/pytorch:2.4.0', ['python', '-c', 'print(1)'], { out: 'gpux-out', gpus: 2, gpuModel: ['H100', 'A100'], env: ['A=1', 'HOME_X'], input: [file], maxPrice: '2.5 USDC', timeout: 90 }, { HOME_X: 'x' });
    assert.equal(spec.name, 'run-pytorch');
    assert.deepEqual([spec.command, spec.args], [['python'], ['-c', 'print(1)']]);
    assert.deepEqual(spec.env, { A: '1', HOME_X: 'x' });
    assert.deepEqual(spec.resources.gpu, { count: 2, models: ['H100', 'A100'] });
    assert.equal(spec.maxPricePerGpuHour, 2_500_000);
    assert.equal(spec.timeoutSeconds, 90);
    assert.deepEqual(localInputs.map((l) => [l.path, l.file, l.size]), [['data.csv', file, 4]]);
  });

  test('usage errors say what to write', () => {
    const usage = (fn: () => unknown, re: RegExp) => assert.throws(fn, (e: unknown) => e instanceof CliError && e.exitCode === 2 && re.test(e.message));
    usage(() => runSpec('busybox', [], { out: 'o' }, {}), /needs a command after the image: gpux run IMAGE \[flags\] -- CMD/);
    usage(() => runSpec('busybox', ['true'], { out: 'o', env: ['NOPE'] }, {}), /--env NOPE: NOPE is not set in this shell/);
    usage(() => runSpec('busybox', ['true'], { out: 'o', env: ['1X=2'] }, {}), /write KEY=VALUE/);
    usage(() => runSpec('busybox', ['true'], { out: 'o', input: ['/nonexistent/x.bin'] }, {}), /cannot be uploaded/);
    usage(() => parseMaxPrice('2.5 EUR'), /the asset must be usdc or credit/);
    usage(() => parseMaxPrice('abc'), /is not a number/);
    assert.deepEqual(parseMaxPrice('0.5 credit').asset, 'credit');
  });

  test('the exit code is the job\'s: 0, its own (1-255), 1 without one, 130 when cancelled', () => {
    const job = (state: JobView['state'], exitCode: number | null) => ({ state, exitCode }) as JobView;
    assert.equal(runExitCode(job('succeeded', 0)), 0);
    assert.equal(runExitCode(job('failed', 3)), 3);
    assert.equal(runExitCode(job('failed', null)), 1);
    assert.equal(runExitCode(job('failed', 0)), 1);
    assert.equal(runExitCode(job('failed', 300)), 1);
    assert.equal(runExitCode(job('cancelled', null)), 130);
  });
});

describe('gpux run and Ctrl-C against a real network (docker)', requireDocker(), () => {
  let net: DevNetwork;
  let client: GpuxClient;
  before(async () => {
    net = await startDevNetwork();
    const profile = JSON.parse(readFileSync(join(net.home, 'profile.json'), 'utf8'));
    client = new GpuxClient({ url: profile.url, token: profile.token });
  });
  after(() => net?.stop());

  const stateOf = async (id: string) => (await client.getJob(id)).job.state;
  async function waitState(id: string, states: JobView['state'][]): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (!states.includes(await stateOf(id))) {
      assert.ok(Date.now() < deadline, `job ${id} never reached ${states.join(' or ')} (it is ${await stateOf(id)})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  test('gpux run: uploads --input, streams stdout and stderr apart, writes outputs to ./gpux-out/JOB_ID, exits with the job\'s code', async (t) => {
    const cwd = tempDir(t);
    writeFileSync(join(cwd, 'names.txt'), 'Ada\nGrace\n');
    const r = await net.gpux(['run', 'busybox:1.36', '--input', 'names.txt', '--env', 'GREETING=hi', '--', 'sh', '-c', 'echo "$GREETING from run"; echo "to stderr" >&2; sed "s/^/hello /" "$GPUX_INPUTS/names.txt" > "$GPUX_OUTPUTS/out.txt"; exit 3'], { cwd });
    assert.equal(r.code, 3, show(r));
    assert.equal(r.stdout, 'hi from run\n', 'stdout is the job\'s stdout only');
    assert.match(r.stderr, /^to stderr$/m, show(r));
    assert.match(r.stderr, /^uploading input names\.txt from /m);
    assert.match(r.stderr, /^job job-\S+ failed \(in .*exit code 3/m);
    const id = jobIdOf(r.stderr);
    assert.match(r.stderr, new RegExp(`^wrote 1 output file\\(s\\) to gpux-out/${id}$`, 'm'));
    assert.equal(readFileSync(join(cwd, 'gpux-out', id, 'out.txt'), 'utf8'), 'hello Ada\nhello Grace\n');

    const ok = await net.gpux(['run', 'busybox:1.36', '--', 'true'], { cwd });
    assert.equal(ok.code, 0, show(ok));
  });

  test('the order of stdout and stderr lines is kept from the container to `gpux run` and `gpux job logs`', async () => {
    // Spaced writes: the engine reads the two streams from two pipes, so writes closer together than its copy
    // latency can be reordered before gpux sees them (docker logs shows the same); from the node on, the order holds.
    const script = 'echo out; sleep 0.3; echo err >&2; sleep 0.3; echo out2; sleep 0.3; echo err2 >&2; sleep 0.3; echo out3';
    const run = await net.gpuxMerged(['run', 'busybox:1.36', '--', 'sh', '-c', script]);
    assert.equal(run.code, 0, run.output);
    const jobLines = (s: string) => s.split('\n').filter((l) => /^(out|err)\d?$/.test(l));
    assert.deepEqual(jobLines(run.output), ['out', 'err', 'out2', 'err2', 'out3'], run.output);
    const logs = await net.gpuxMerged(['job', 'logs', jobIdOf(run.output)]);
    assert.deepEqual(jobLines(logs.output), ['out', 'err', 'out2', 'err2', 'out3'], logs.output);
  });

  test('Ctrl-C on gpux run (not a terminal): the job keeps running, the exact cancel command is printed, exit 130', async () => {
    const cli = net.spawn(['run', 'busybox:1.36', '--', 'sh', '-c', 'echo started; sleep 60']);
    const id = jobIdOf((await cli.waitFor(/submitted job (job-\S+)/))[0]);
    await cli.waitFor(/^started$/m);
    cli.child.kill('SIGINT');
    const r = await cli.ended;
    assert.equal(r.code, 130, show(r));
    assert.match(r.stderr, new RegExp(`interrupted: job ${id} is still running and billing; only this command stopped`), show(r));
    assert.match(r.stderr, new RegExp(`cancel it: +gpux job cancel ${id}$`, 'm'));
    assert.equal(await stateOf(id), 'running', 'the job was not cancelled');
    await client.cancelJob(id);
  });

  test('Ctrl-C on gpux run --cancel-on-exit cancels the job', async () => {
    const cli = net.spawn(['run', 'busybox:1.36', '--cancel-on-exit', '--', 'sh', '-c', 'echo started; sleep 60']);
    const id = jobIdOf((await cli.waitFor(/submitted job (job-\S+)/))[0]);
    await cli.waitFor(/^started$/m);
    cli.child.kill('SIGINT');
    const r = await cli.ended;
    assert.equal(r.code, 130, show(r));
    assert.match(r.stderr, new RegExp(`cancelling job ${id}`), show(r));
    await waitState(id, ['cancelled']);
  });

  test('Ctrl-C on job submit --wait and on job logs -f says the job still runs and how to cancel it', async (t) => {
    const spec = join(tempDir(t), 'sleep.yaml');
    writeFileSync(spec, 'name: sleeper\nimage: busybox:1.36\ncommand: [sh, -c, "echo started; sleep 60"]\n');
    const submit = net.spawn(['job', 'submit', spec, '--wait']);
    const id = jobIdOf((await submit.waitFor(/submitted job (job-\S+)/))[0]);
    await waitState(id, ['running']);
    await submit.waitFor(/: running /);
    submit.child.kill('SIGINT');
    const s = await submit.ended;
    assert.equal(s.code, 130, show(s));
    assert.match(s.stderr, new RegExp(`interrupted: job ${id} is still running and billing`), show(s));
    assert.match(s.stderr, new RegExp(`gpux job cancel ${id}$`, 'm'));

    const follow = net.spawn(['job', 'logs', id, '-f']);
    await follow.waitFor(/^started$/m);
    follow.child.kill('SIGINT');
    const f = await follow.ended;
    assert.equal(f.code, 130, show(f));
    assert.match(f.stderr, new RegExp(`interrupted: job ${id} is still running and billing`), show(f));
    assert.match(f.stderr, new RegExp(`gpux job cancel ${id}$`, 'm'));
    assert.equal(await stateOf(id), 'running', 'neither command cancelled it');
    await client.cancelJob(id);
  });

  test('job logs on a queued job says it has not started; -f says it waits', async (t) => {
    const spec = join(tempDir(t), 'gpu.yaml');
    // No node here has a GPU: the job stays queued.
    writeFileSync(spec, 'name: waits\nimage: busybox:1.36\ncommand: ["true"]\nresources: { gpu: { count: 1 } }\nmaxPricePerGpuHour: 1000000\n');
    const sub = await net.gpux(['job', 'submit', spec]);
    assert.equal(sub.code, 0, show(sub));
    const id = jobIdOf(sub.stdout);
    const logs = await net.gpux(['job', 'logs', id]);
    assert.equal(logs.code, 0, show(logs));
    assert.equal(logs.stdout, '');
    assert.equal(logs.stderr, `job ${id} is queued; it has not started yet — follow with -f: gpux job logs ${id} -f\n`);

    const follow = net.spawn(['job', 'logs', id, '-f']);
    await follow.waitFor(/has not started yet: waiting for its logs/);
    follow.child.kill('SIGINT');
    const f = await follow.ended;
    assert.equal(f.code, 130, show(f));
    assert.match(f.stderr, new RegExp(`interrupted: job ${id} is still queued: it will run \\(and bill\\) once a node takes it`), show(f));
    await client.cancelJob(id);
  });

  /** `gpux run` in process, with a terminal that answers `answer` and an interrupt the test fires. */
  function runInProcess(args: string[], answer: (q: string) => Promise<string>) {
    const hook: { fire?: (s: NodeJS.Signals) => void } = {};
    const exits: number[] = [];
    const questions: string[] = [];
    const deps: RunDeps = {
      listen: (on) => {
        hook.fire = on;
        return () => delete hook.fire;
      },
      exit: (code) => void exits.push(code),
      ask: (q) => {
        questions.push(q);
        return answer(q);
      },
    };
    const io = captureIo({ GPUX_HOME: net.home });
    const program = new Command('gpux').exitOverride();
    registerRun(program, io, deps);
    const done = program.parseAsync(['node', 'gpux', 'run', ...args]);
    return { io, done, exits, questions, interrupt: () => hook.fire?.('SIGINT') };
  }

  test('on a terminal, Ctrl-C asks "cancel job …? [y/N]": y cancels; a second Ctrl-C leaves at once', async () => {
    const yes = runInProcess(['busybox:1.36', '--', 'sh', '-c', 'echo started; sleep 60'], async () => 'y');
    await waitForText(() => yes.io.stdout(), /^started$/m);
    const id = jobIdOf(yes.io.stderr());
    yes.interrupt();
    await yes.done;
    assert.deepEqual(yes.questions, [`\ncancel job ${id}? [y/N] `]);
    assert.equal(yes.io.exitCode, 130);
    await waitState(id, ['cancelled']);

    let answer: (s: string) => void = () => {};
    const twice = runInProcess(['busybox:1.36', '--', 'sh', '-c', 'echo started; sleep 60'], () => new Promise((r) => (answer = r)));
    await waitForText(() => twice.io.stdout(), /^started$/m);
    const id2 = jobIdOf(twice.io.stderr());
    twice.interrupt();
    await waitForText(() => String(twice.questions.length), /^1$/);
    twice.interrupt();
    assert.deepEqual(twice.exits, [130], 'the second Ctrl-C exits at once');
    assert.match(twice.io.stderr(), new RegExp(`leaving; job ${id2} is not cancelled: gpux job cancel ${id2}`));
    answer('');
    await twice.done;
    assert.match(twice.io.stderr(), new RegExp(`cancel it: +gpux job cancel ${id2}`), 'no answer: it stays running, and says how to cancel');
    assert.equal(await stateOf(id2), 'running');
    await client.cancelJob(id2);
  });
});

async function waitForText(text: () => string, pattern: RegExp, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(text())) {
    assert.ok(Date.now() < deadline, `no ${pattern} within ${timeoutMs} ms in:\n${text()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
