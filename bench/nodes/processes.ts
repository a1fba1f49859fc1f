/** The child processes of `bench:nodes`: coordinators, the baseline server and the node workers. */
import { type ChildProcess, fork } from 'node:child_process';
import { type ChildServer, startChildServer } from '../lib/child-server.js';
import type { NodesCoordinatorSettings } from './coordinator-child.js';
import type { AddResult, FromWorker, ToWorker, WindowResult, WorkerInit } from './protocol.js';

const here = (f: string) => new URL(f, import.meta.url).pathname;

export type Server = ChildServer;

export function startCoordinatorChild(s: NodesCoordinatorSettings, cpuProfDir: string | null): Promise<Server> {
  return startChildServer(here('./coordinator-child.ts'), [JSON.stringify(s)], cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : []);
}

export function startBaselineServer(intervalMs: number): Promise<Server> {
  return startChildServer(here('./baseline-server.ts'), [String(intervalMs)]);
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
