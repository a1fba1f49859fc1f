/** Test helpers: a real `gpux dev` (coordinator + a docker node) as a child process, and the real CLI spawned against it. */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const repoRoot = join(import.meta.dirname, '..', '..', '..');
export const BIN = join(repoRoot, 'packages', 'cli', 'bin', 'gpux.js');

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export const show = (r: Run) => `exit ${r.code ?? r.signal}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

/** A running CLI process whose output is collected as it comes. */
export class Cli {
  stdout = '';
  stderr = '';
  readonly ended: Promise<Run>;
  constructor(readonly child: ChildProcess) {
    child.stdout?.on('data', (b) => (this.stdout += b));
    child.stderr?.on('data', (b) => (this.stderr += b));
    this.ended = new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (code, signal) => resolve({ code, signal, stdout: this.stdout, stderr: this.stderr }));
    });
  }

  /** Resolves with the first match of `pattern` in stdout + stderr; rejects if the process ends or the deadline passes. */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    let ended = false;
    void this.ended.then(() => (ended = true));
    for (;;) {
      const m = `${this.stdout}\n${this.stderr}`.match(pattern);
      if (m) return m;
      if (ended || Date.now() > deadline) throw new Error(`no ${pattern} ${ended ? 'before the process ended' : `within ${timeoutMs} ms`}:\n${this.stdout}\n${this.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

export interface DevNetwork {
  env: NodeJS.ProcessEnv;
  home: string;
  /** Starts the CLI with `args` (stdin ignored: not a terminal). */
  spawn(args: string[], opts?: { cwd?: string }): Cli;
  /** Runs the CLI to its end. */
  gpux(args: string[], opts?: { cwd?: string }): Promise<Run>;
  /** Runs the CLI with stdout and stderr into one file, as `cmd >f 2>&1` would: the order of the two streams is kept. */
  gpuxMerged(args: string[]): Promise<{ code: number | null; output: string }>;
  stop(): Promise<void>;
}

/** `gpux dev --executor docker` in a temp data dir, its profile in a temp GPUX_HOME (so the CLI needs no flags). */
export async function startDevNetwork(): Promise<DevNetwork> {
  // Removed by stop(), not by a test's after hook: the network outlives each test of its suite.
  const home = mkdtempSync(join(tmpdir(), 'gpux-run-home-'));
  const dataDir = mkdtempSync(join(tmpdir(), 'gpux-run-data-'));
  const removeDirs = () => {
    for (const d of [home, dataDir]) rmSync(d, { recursive: true, force: true, maxRetries: 3 });
  };
  const env: NodeJS.ProcessEnv = { ...process.env, GPUX_HOME: home };
  for (const k of Object.keys(env)) if (k.startsWith('GPUX_') && k !== 'GPUX_HOME') delete env[k];
  const dev = new Cli(spawn(process.execPath, [BIN, 'dev', '--port', '0', '--data-dir', dataDir, '--no-sample-job', '--executor', 'docker'], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  await dev.waitFor(/^gpux dev is running/m, 120_000).catch((err: unknown) => {
    dev.child.kill('SIGKILL');
    removeDirs();
    throw err;
  });
  const spawnCli = (args: string[], opts: { cwd?: string } = {}) => new Cli(spawn(process.execPath, [BIN, ...args], { cwd: opts.cwd ?? repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  return {
    env,
    home,
    spawn: spawnCli,
    gpux: (args, opts) => spawnCli(args, opts).ended,
    gpuxMerged: async (args) => {
      const file = join(home, `merged-${process.hrtime.bigint()}.txt`);
      const fd = openSync(file, 'w');
      const child = spawn(process.execPath, [BIN, ...args], { cwd: repoRoot, env, stdio: ['ignore', fd, fd] });
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      closeSync(fd);
      return { code, output: readFileSync(file, 'utf8') };
    },
    stop: async () => {
      if (dev.child.exitCode === null && dev.child.signalCode === null) dev.child.kill('SIGINT');
      const end = await dev.ended;
      removeDirs();
      assert.equal(end.code, 0, `gpux dev did not stop cleanly:\n${show(end)}`);
    },
  };
}

/** The job id a command printed ("submitted job job-…"). */
export function jobIdOf(text: string): string {
  const id = text.match(/job (job-[0-9a-z]+)/)?.[1];
  assert.ok(id, `no job id in:\n${text}`);
  return id;
}
