/** The child processes of `bench:nodes`: coordinators, the baseline server and the node workers. */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { NodesCoordinatorSettings } from './coordinator-child.js';
import type { AddResult, FromWorker, ToWorker, WindowResult, WorkerInit } from './protocol.js';

const here = (f: string) => new URL(f, import.meta.url).pathname;

export interface Server {
  url: string;
  pid: number;
  /** Bootstrap operator token: the first coordinator on an empty database only. */
  operatorToken: string | null;
  close(): Promise<void>;
}

/** Starts a tsx entry that prints one JSON line with its url when ready and closes when stdin ends. */
async function startServer(entry: string, args: string[], nodeFlags: string[]): Promise<Server> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', ...nodeFlags, here(entry), ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  let closing = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    if (!closing) process.stderr.write(`  ${entry} (pid ${child.pid}) exited on its own: code ${code}, signal ${signal}\n`);
  });
  let readyTimer: NodeJS.Timeout | undefined;
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (l) => {
      rl.close();
      // Ready: the start-up deadline no longer applies (left armed, it would kill a healthy child later).
      clearTimeout(readyTimer);
      // Keep draining: a child whose logs fill an unread pipe blocks or dies. Its warnings go to our stderr.
      child.stdout!.on('data', (c: Buffer) => process.stderr.write(c));
      resolve(l);
    });
    child.once('exit', (code) => reject(new Error(`${entry} exited with ${code} before it was ready`)));
    readyTimer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${entry} not ready within 120 s`));
    }, 120_000);
    readyTimer.unref();
  });
  const { url, operatorToken } = JSON.parse(line) as { url: string; operatorToken?: string | null };
  return {
    url,
    pid: child.pid as number,
    operatorToken: operatorToken ?? null,
    async close() {
      closing = true;
      child.stdin!.end();
      const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

export function startCoordinatorChild(s: NodesCoordinatorSettings, cpuProfDir: string | null): Promise<Server> {
  return startServer('./coordinator-child.ts', [JSON.stringify(s)], cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : []);
}

export function startBaselineServer(intervalMs: number): Promise<Server> {
  return startServer('./baseline-server.ts', [String(intervalMs)], []);
}

/** A node-worker process and a request/answer channel to it (one command at a time). */
export class NodeWorker {
  private readonly child: ChildProcess;
  private pending: ((m: FromWorker) => void) | null = null;

  constructor() {
    this.child = fork(here('./node-worker.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (m: FromWorker) => {
      const p = this.pending;
      this.pending = null;
      p?.(m);
    });
    this.child.on('exit', (code) => {
      if (this.pending && code !== 0) throw new Error(`node worker exited with ${code}`);
    });
  }

  get pid(): number {
    return this.child.pid as number;
  }

  private ask(msg: ToWorker): Promise<FromWorker> {
    if (this.pending) throw new Error('node worker: one command at a time');
    return new Promise((resolve) => {
      this.pending = resolve;
      this.child.send(msg);
    });
  }

  async init(msg: WorkerInit): Promise<void> {
    await this.ask(msg);
  }
  async add(indices: number[], enrollmentToken: string | null, concurrency: number): Promise<AddResult> {
    const m = await this.ask({ cmd: 'add', indices, enrollmentToken, concurrency });
    if (m.reply !== 'added') throw new Error(`node worker answered ${m.reply} to add`);
    return m.result;
  }
  async mark(): Promise<void> {
    await this.ask({ cmd: 'mark' });
  }
  async collect(): Promise<WindowResult> {
    const m = await this.ask({ cmd: 'collect' });
    if (m.reply !== 'window') throw new Error(`node worker answered ${m.reply} to collect`);
    return m.result;
  }
  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.send({ cmd: 'stop' });
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(killer);
  }
}
