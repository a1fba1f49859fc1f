/** Issue 17: a job's predicted run time (and finish) in words, as `gpux job get` and `gpux job explain` show it. */
import type { RunPrediction } from '@gpux/protocol';
import { formatDuration, formatTime } from './output.js';

/** "~4m (90%: under 11m), from 12 runs of this job family …"; "unknown yet" when nothing has run. */
export function predictedRunLine(p: RunPrediction): string {
  if (!p.runTimeMs) return 'unknown yet (no earlier runs to learn from)';
  return `~${formatDuration(p.runTimeMs.median)} (90%: under ${formatDuration(p.runTimeMs.p90)}), from ${p.samples} ${p.basisText}`;
}

/** How earlier predictions fared for this buyer; null before any. */
export function accuracyLine(p: RunPrediction): string | null {
  const a = p.buyerAccuracy;
  if (a.runs === 0 || a.medianErrorRatio === null || a.p90Coverage === null) return null;
  return `your last ${a.runs} predicted runs: typically ${Math.round((a.medianErrorRatio - 1) * 100)}% off, ${Math.round(a.p90Coverage * 100)}% ended within the 90% figure`;
}

/** Key-value rows for a job's detail. */
export function predictionRows(p: RunPrediction): Array<[string, string | null]> {
  return [
    ['predicted run', predictedRunLine(p)],
    ['predicted start', p.startAt ? `${formatTime(p.startAt.median)} (90%: by ${formatTime(p.startAt.p90)}; when room for it frees up, if no job ahead takes it)` : null],
    ['predicted end', p.finishAt ? `${formatTime(p.finishAt.median)} (90%: by ${formatTime(p.finishAt.p90)})` : null],
    ['predictions so far', accuracyLine(p)],
  ];
}
