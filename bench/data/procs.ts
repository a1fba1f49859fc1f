/**
 * Processes of the data benchmark: the real `gpux` CLI as a child, timed, with its peak memory read from
 * /proc/PID/status (VmHWM, the kernel's own high-water mark of resident memory, and VmRSS polled every 50 ms).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { GPUX_BIN } from '../../packages/testing/src/processes.js';

const MiB = 2 ** 20;

/** VmHWM and VmRSS of a live process in MiB; undefined once it is gone (or off Linux). */
export function procMemory(pid: number): { hwm: number; rss: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { hwm: (kib('VmHWM') * 1024) / MiB, rss: (kib('VmRSS') * 1024) / MiB };
  } catch {
    return undefined;
  }
}

/** Polls a process's memory every 50 ms and keeps the peaks (VmHWM can only grow; its last reading is the peak). */
export class MemoryWatch {
  peakRss = 0;
  hwm = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 50);
  }

  sample(): void {
    const m = procMemory(this.pid);
    // A process on its way out may have no Vm* lines any more: NaN then, and kept out of the peaks.
    if (!m) return;
    if (Number.isFinite(m.rss)) this.peakRss = Math.max(this.peakRss, m.rss);
    if (Number.isFinite(m.hwm)) this.hwm = Math.max(this.hwm, m.hwm);
  }

  /** Peak RSS seen since `reset`; the kernel's high-water mark covers the process's whole life. */
  reset(): void {
    this.peakRss = 0;
    this.sample();
  }

  stop(): void {
    this.sample();
    clearInterval(this.timer);
  }
}

export interface CliRun {
  stdout: string;
  seconds: number;
  /** Peak resident memory of the CLI process (MiB): its VmHWM as last read before it exited. */
  peakRssMiB: number;
}

/** Run `gpux ARGS` to completion; fails with its output on a non-zero exit. */
export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [GPUX_BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const watch = new MemoryWatch(child.pid as number);
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    err += d;
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => {
      watch.stop();
      const seconds = (performance.now() - started) / 1000;
      if (code !== 0) reject(new Error(`gpux ${args.join(' ')} exited ${code}:\n${out}${err}`));
      else resolve({ stdout: out, seconds, peakRssMiB: Math.max(watch.hwm, watch.peakRss) });
    });
  });
}
