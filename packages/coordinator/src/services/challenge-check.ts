/** The reveal check off the event loop (challenge-check-worker.ts): one worker thread per check, ended after. */
import { Worker } from 'node:worker_threads';
import type { BlockCheck, CheckRevealInput, Random } from '@gpux/core';

export async function checkRevealOffThread(input: Omit<CheckRevealInput, 'random'>, random: Random): Promise<BlockCheck[]> {
  const seed = Math.floor(random.next() * 2 ** 32);
  const worker = new Worker(new URL('./challenge-check-worker.mjs', import.meta.url), { execArgv: [] });
  try {
    return await new Promise<BlockCheck[]>((resolve, reject) => {
      worker.once('message', (m: { checks?: BlockCheck[]; error?: string }) => (m.checks ? resolve(m.checks) : reject(new Error(`reveal check failed: ${m.error}`))));
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`reveal check worker exited with code ${code}`)));
      worker.postMessage({ input, seed });
    });
  } finally {
    await worker.terminate();
  }
}
