/**
 * The cpu challenge runner: core's generator, multiplyInt and Merkle digests in a worker thread, so the
 * agent keeps heartbeating while it computes. Meant for CPU-only nodes (n ≈ 256) and CI; a GPU node that falls
 * back to it computes every claimed GPU's work in turn and fails on time, as it should.
 */
import { Worker } from 'node:worker_threads';
import type { ChallengeAssignment, RevealItem } from '@gpux/protocol';
import type { ChallengeGpuDigests, ChallengeRun, ChallengeRunner, RevealedBlock } from './runner.js';

type Out = { type: 'digests'; gpus: ChallengeGpuDigests[] } | { type: 'blocks'; blocks: RevealedBlock[] } | { type: 'error'; message: string };

export class CpuChallengeRunner implements ChallengeRunner {
  readonly kind = 'cpu' as const;

  async run(assignment: ChallengeAssignment, signal: AbortSignal): Promise<ChallengeRun> {
    const receivedAt = Date.now();
    const worker = new Worker(new URL('./cpu-worker.mjs', import.meta.url), { execArgv: [] });
    let disposed = false;
    const dispose = async () => {
      if (disposed) return;
      disposed = true;
      signal.removeEventListener('abort', onAbort);
      await worker.terminate();
    };
    const onAbort = () => void dispose();
    signal.addEventListener('abort', onAbort, { once: true });
    // One request at a time: the next message (or the worker's death) answers it.
    const ask = (msg: unknown) =>
      new Promise<Out>((resolve, reject) => {
        const cleanup = () => {
          worker.off('message', onMessage);
          worker.off('error', onError);
          worker.off('exit', onExit);
        };
        const onMessage = (m: Out) => {
          cleanup();
          if (m.type === 'error') reject(new Error(`cpu challenge runner: ${m.message}`));
          else resolve(m);
        };
        const onError = (e: Error) => {
          cleanup();
          reject(e);
        };
        const onExit = () => {
          cleanup();
          reject(new Error(signal.aborted ? 'challenge aborted' : 'cpu challenge worker exited'));
        };
        worker.on('message', onMessage);
        worker.on('error', onError);
        worker.on('exit', onExit);
        worker.postMessage(msg);
      });
    try {
      if (signal.aborted) throw new Error('challenge aborted');
      const res = await ask({ type: 'run', assignment, receivedAt });
      if (res.type !== 'digests') throw new Error('cpu challenge runner: unexpected answer');
      return {
        runner: 'cpu',
        gpus: res.gpus,
        reveal: async (items: readonly RevealItem[]) => {
          const r = await ask({ type: 'reveal', items: [...items] });
          if (r.type !== 'blocks') throw new Error('cpu challenge runner: unexpected answer');
          return r.blocks;
        },
        dispose,
      };
    } catch (e) {
      await dispose();
      throw e;
    }
  }
}
