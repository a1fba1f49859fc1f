/**
 * The reveal check's worker thread: Merkle paths and Freivalds rounds with core's functions. Regenerating B
 * for B·x is O(n²) hash evaluations, seconds at GPU sizes, so it never runs on the event loop that serves
 * heartbeats and results. In: {input, seed}; out: {checks} or {error}.
 */
import { parentPort } from 'node:worker_threads';
import { type CheckRevealInput, checkRevealedBlocks, seededRandom } from '@gpux/core';

parentPort?.once('message', (m: { input: Omit<CheckRevealInput, 'random'>; seed: number }) => {
  try {
    // The Freivalds vectors are drawn after the node revealed its blocks, from a seed the coordinator's CSPRNG chose.
    parentPort?.postMessage({ checks: checkRevealedBlocks({ ...m.input, random: seededRandom(m.seed) }) });
  } catch (err) {
    parentPort?.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
});
