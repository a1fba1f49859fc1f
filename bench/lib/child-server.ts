/**
 * A benchmark's server in a child process of its own (a coordinator, a baseline server): the child prints one JSON
 * line when it is ready ({ url, … }) and closes when its stdin ends or on SIGTERM; the parent starts it, waits for
 * that line (up to a start-up deadline that is cleared once it came), keeps draining its stdout, and closes it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ChildServer {
  url: string;
  pid: number;
  /** Bootstrap operator token: a coordinator on an empty database only. */
  operatorToken: string | null;
  close(): Promise<void>;
}

/** Start `entry` (an absolute path of a tsx entry) with `args`, and wait until it is ready. */
export async function startChildServer(entry: string, args: string[], nodeFlags: string[] = [], readyWithinMs = 120_000): Promise<ChildServer> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', ...nodeFlags, entry, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
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
      // Keep draining: a child whose logs fill an unread pipe blocks or dies. Its output goes to our stderr.
      child.stdout!.on('data', (c: Buffer) => process.stderr.write(c));
      resolve(l);
    });
    child.once('exit', (code) => reject(new Error(`${entry} exited with ${code} before it was ready`)));
    readyTimer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${entry} not ready within ${readyWithinMs / 1000} s`));
    }, readyWithinMs);
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

/** The child's side: announce `ready` as one JSON line, then close and exit normally (so --cpu-prof writes) when stdin ends or on SIGTERM. */
export function serveUntilStdinEnds(ready: Record<string, unknown>, close: () => Promise<void>): void {
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  let closing = false;
  const shutdown = async () => {
    if (closing) return;
    closing = true;
    await close();
    process.exit(0);
  };
  process.stdin.on('end', shutdown);
  process.stdin.on('close', shutdown);
  process.stdin.resume();
  process.on('SIGTERM', shutdown);
}
