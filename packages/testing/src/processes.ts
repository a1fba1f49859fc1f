/** Start gpux CLI processes (coordinator, node agents) for end-to-end tests, and stop them for sure. */
import { randomBytes } from 'node:crypto';
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Coordinator timing for tests with processes: leases short enough to see a lost node within seconds, long enough
 * that a loaded 2-core CI machine does not miss them (spurious losses requeue jobs with growing backoff and could
 * auto-cordon healthy nodes).
 */
export const FAST_TIMING_ENV = {
  GPUX_HEARTBEAT_MS: '500',
  GPUX_LEASE_TTL_MS: '4000',
  GPUX_NODE_OFFLINE_AFTER_MS: '4000',
  GPUX_RETRY_BASE_BACKOFF_MS: '200',
  GPUX_SCHEDULE_PASS_MS: '100',
  GPUX_EXPIRY_PASS_MS: '200',
} as const;

export const GPUX_BIN = fileURLToPath(new URL('../../cli/bin/gpux.js', import.meta.url));

export interface GpuxProcess {
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Send a signal and wait for the exit (SIGKILL after `graceMs`). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | null>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export function spawnGpux(args: string[], env: NodeJS.ProcessEnv): GpuxProcess {
  return trackGpux(spawn(process.execPath, [GPUX_BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** A gpux child started elsewhere (inside a network namespace, say): its output collected, stopped with the test, SIGKILLed at exit. */
export function trackGpux(child: ChildProcess): GpuxProcess {
  live.add(child);
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code) => {
      live.delete(child);
      resolve(code);
    });
  });
  return {
    child,
    output: () => out,
    async stop(signal = 'SIGTERM', graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

export { freePort } from './free-port.js';

/** Poll `check` until it returns a value other than undefined, or fail after `timeoutMs` with `what`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A Random for tests that issue tokens through the coordinator's store (Math.random draws, crypto bytes). */
export const testRandom = { next: Math.random, bytes: (n: number) => new Uint8Array(randomBytes(n)) };
