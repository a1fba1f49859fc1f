/** Test helper: a real agent (startAgent: real client, real loops) against a FakeCoordinator, recording what it ran and logged. */
import type { ExecutionOutcome, Executor, Logger } from '@gpux/core';
import type { NodeAdvertisementInput } from '@gpux/protocol';
import { loadAgentConfig, type RunningAgent, startAgent } from '../src/index.js';
import type { FakeCoordinator } from './fake-coordinator.js';

export type T = { after(fn: () => unknown): void };

export const advertisement = { hostname: 'h', os: 'linux', arch: 'x64', cpuCores: 2, memoryMb: 4096, gpus: [], executors: ['process'], agentVersion: '0' } as unknown as NodeAdvertisementInput;

/** Records what it was asked to run; `wait` runs until stopped, anything else succeeds at once. */
export function recordingExecutor() {
  const started: { attemptId: string; command: string[] }[] = [];
  const stopped: string[] = [];
  const sinks = new Map<string, (stream: 'stdout' | 'stderr', data: string) => void>();
  const outcome = (o: ExecutionOutcome['outcome'], exitCode: number | null): ExecutionOutcome => ({ outcome: o, exitCode, error: null, outputs: [], outputDigest: '0'.repeat(64), durationMs: 1 });
  const executor: Executor = {
    kind: 'process',
    async start(req, log) {
      started.push({ attemptId: req.attemptId, command: req.spec.command });
      sinks.set(req.attemptId, log);
      let finish: (o: ExecutionOutcome) => void = () => {};
      const done = new Promise<ExecutionOutcome>((r) => {
        finish = r;
      });
      if (req.spec.command[0] !== 'wait') finish(outcome('succeeded', 0));
      return {
        done,
        async stop() {
          stopped.push(req.attemptId);
          finish(outcome('cancelled', null));
        },
      };
    },
  };
  return { executor, started, stopped, executorLogs: (attemptId: string) => sinks.get(attemptId) };
}

export function recordingLogger() {
  const lines: { level: string; msg: string; obj: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (obj: object | string, msg?: string): void => {
      lines.push(typeof obj === 'string' ? { level, msg: obj, obj: {} } : { level, msg: msg ?? '', obj: obj as Record<string, unknown> });
    };
  const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => logger };
  return { logger, lines };
}

export async function agent(t: T, c: FakeCoordinator, dataDir: string, over: { enrollmentToken?: string; coordinatorKey?: string; caFile?: string; coordinatorCertSha256?: string } = {}) {
  const config = loadAgentConfig({}, { coordinatorUrl: c.url, dataDir, executor: 'process', allowUnsafeProcess: true, pollWaitMs: 200, enrollmentToken: 'gpux_enroll_secret', ...over });
  const ex = recordingExecutor();
  const log = recordingLogger();
  const running: RunningAgent = await startAgent(config, { executor: ex.executor, logger: log.logger, advertisement });
  t.after(() => running.stop());
  return { running, ...ex, ...log };
}

