/** Job facts shared by the jobs table and the job page. */
import type { JobView } from '@gpux/protocol';
import { duration } from './format.js';

export function gpuAsk(j: JobView): string {
  const g = j.spec.resources.gpu;
  if (!g.count) return 'CPU only';
  const models = g.models?.length ? ` ${g.models.join(' / ')}` : g.vendor ? ` ${g.vendor}` : '';
  return `${g.count} ×${models || ' GPU'}`;
}

export function runtime(j: JobView, now: number): string {
  if (j.startedAt === null) return '—';
  return duration((j.finishedAt ?? now) - j.startedAt);
}
