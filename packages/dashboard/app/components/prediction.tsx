/** Issue 17: a job's predicted run time, end and how earlier predictions fared, as rows of the job's Summary. */
import type { ReactNode } from 'react';
import type { RunPrediction } from '@gpux/protocol';
import { dateTime, duration } from '../lib/format.js';

export function predictionText(p: RunPrediction): string {
  if (!p.runTimeMs) return 'Unknown yet: no earlier runs to learn from';
  return `About ${duration(p.runTimeMs.median)} (90%: under ${duration(p.runTimeMs.p90)}), from ${p.samples} ${p.basisText}`;
}

export function predictionFacts(p: RunPrediction): Array<[string, ReactNode]> {
  const a = p.buyerAccuracy;
  const rows: Array<[string, ReactNode]> = [['Predicted run', <span key="p" data-testid="prediction-run">{predictionText(p)}</span>]];
  if (p.startAt) rows.push(['Predicted start', <span key="s" data-testid="prediction-start">{`${dateTime(p.startAt.median)} (90%: by ${dateTime(p.startAt.p90)}; when room for it frees up, if no job ahead takes it)`}</span>]);
  if (p.finishAt) rows.push(['Predicted end', `${dateTime(p.finishAt.median)} (90%: by ${dateTime(p.finishAt.p90)})`]);
  if (a.runs > 0 && a.medianErrorRatio !== null && a.p90Coverage !== null) {
    rows.push(['Predictions so far', `your last ${a.runs} predicted runs: typically ${Math.round((a.medianErrorRatio - 1) * 100)}% off, ${Math.round(a.p90Coverage * 100)}% ended within the 90% figure`]);
  }
  return rows;
}
