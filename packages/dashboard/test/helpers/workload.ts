/** A steady, bounded stream of GPU jobs for simulated nodes, so live pages have something to show. */
import type { JobSpecInput } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';

const NAMES = ['resnet50-train', 'llama-8b-finetune', 'whisper-batch', 'sdxl-render', 'bert-eval', 'vit-pretrain', 'embeddings-index', 'protein-fold'];

export interface Workload {
  submitted: string[];
  stop(): Promise<void>;
}

/** `initial` jobs at once, then one every `everyMs` until stopped or `max` jobs in all. Deterministic by index. */
export function startWorkload(url: string, token: string, opts: { initial: number; everyMs: number; max: number }): Workload {
  const client = new GpuxClient({ url, token });
  const submitted: string[] = [];
  let i = 0;
  const spec = (k: number): JobSpecInput => ({
    name: `${NAMES[k % NAMES.length]}-${String(k).padStart(3, '0')}`,
    image: 'pytorch/pytorch:2.4.0-cuda12.1',
    command: ['python', 'run.py'],
    // GPU jobs only: the process node has no GPU, so these all land on simulated nodes.
    resources: { gpu: { count: [1, 2, 1, 4, 1, 2, 1, 2][k % 8]! } },
    env: { GPUX_SIM_SECONDS: String(8 + ((k * 37) % 40)), ...(k % 9 === 4 ? { GPUX_SIM_EXIT_CODE: '1' } : {}) },
    maxRetries: 0,
  });
  const submit = async () => {
    if (i >= opts.max) return;
    const k = i++;
    const res = await client.submitJob(spec(k));
    submitted.push(res.job.id);
  };
  let pending: Promise<unknown> = Promise.all(Array.from({ length: opts.initial }, submit));
  const timer = setInterval(() => {
    pending = pending.then(submit).catch(() => {});
  }, opts.everyMs);
  return {
    submitted,
    stop: async () => {
      clearInterval(timer);
      await pending.catch(() => {});
    },
  };
}
