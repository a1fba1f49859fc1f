/** Figures of one run over a window of its epochs: convergence to p*, overshoot, utilization, unserved buyers. */
import type { Trace } from './sim.js';

export interface Figures {
  /** The price in effect at the window's first epoch. */
  priceAtStart: number;
  /** Epochs from the window's start until the index first comes within ±band of p*; null: never. */
  firstInBand: number | null;
  /** … until it comes within ±band and stays there for at least `hold` epochs; null: never. */
  settled: number | null;
  /** … until it comes within ±band and stays there to the end (which must be at least `hold` epochs on); null: never. */
  inBandForGood: number | null;
  /** Share of the epochs from the first in band to the end that are in band, %. */
  inBandPct: number | null;
  /** How far the index went past p*, in the direction it had to move, % of p* (0: never past). */
  overshootPct: number;
  /** Mean utilization the index saw (utilizationBps: demand ÷ supply, capped at 2× target) over the last epochs, %. */
  utilLastPct: number;
  /** Mean busy GPUs ÷ supply over the last epochs, %. */
  busyLastPct: number;
  /** Mean index over the last epochs, ÷ p*, and its coefficient of variation, %. */
  priceLastMean: number;
  priceLastOverPStar: number;
  priceLastCvPct: number;
  /** Changes of direction of the index over the last epochs. */
  reversals: number;
  arrivals: number;
  started: number;
  starved: number;
  pricedOut: number;
  /** Mean queue wait of the jobs started in the window, epochs. */
  meanWait: number;
  /** Willing jobs still queued at the end. */
  backlog: number;
  /** Running jobs requeued because their node left. */
  interrupted: number;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Over epochs [from, end) of the trace. */
export function figures(tr: Trace, from: number, end: number, pStar: number, band: number, last: number, hold: number): Figures {
  const p = tr.price;
  const start = p[from] as number;
  const inBand = (t: number) => Math.abs((p[t] as number) - pStar) <= band * pStar;
  let first: number | null = null;
  let settled: number | null = null;
  let lastOut = from - 1;
  let run = 0;
  let inside = 0;
  for (let t = from; t < end; t++) {
    if (inBand(t)) {
      first ??= t;
      inside++;
      if (++run === hold && settled === null) settled = t + 1 - hold;
    } else {
      run = 0;
      lastOut = t;
    }
  }
  const inBandForGood = lastOut > end - 1 - hold ? null : lastOut + 1 - from;

  const win = p.slice(from, end);
  const dir = Math.sign(pStar - start);
  const overshoot = dir > 0 ? Math.max(...win) / pStar - 1 : dir < 0 ? 1 - Math.min(...win) / pStar : Math.max(...win.map((x) => Math.abs(x - pStar))) / pStar;

  const tail = (xs: number[]) => xs.slice(Math.max(from, end - last), end);
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const sum = (xs: number[]) => xs.slice(from, end).reduce((s, x) => s + x, 0);
  const lastPrices = tail(p);
  const priceMean = mean(lastPrices);
  const sd = Math.sqrt(mean(lastPrices.map((x) => (x - priceMean) ** 2)));
  let reversals = 0;
  let prevSign = 0;
  for (let i = 1; i < lastPrices.length; i++) {
    const s = Math.sign((lastPrices[i] as number) - (lastPrices[i - 1] as number));
    if (s !== 0) {
      if (prevSign !== 0 && s !== prevSign) reversals++;
      prevSign = s;
    }
  }
  const busyShare = tr.busy.map((b, i) => b / Math.max(1, tr.supply[i] as number));
  const started = sum(tr.started);
  return {
    priceAtStart: start,
    firstInBand: first === null ? null : first - from,
    settled: settled === null ? null : settled - from,
    inBandForGood,
    inBandPct: first === null ? null : round((inside / (end - first)) * 100, 1),
    overshootPct: round(Math.max(0, overshoot) * 100, 1),
    utilLastPct: round(mean(tail(tr.utilBps)) / 100, 1),
    busyLastPct: round(mean(tail(busyShare)) * 100, 1),
    priceLastMean: Math.round(priceMean),
    priceLastOverPStar: round(priceMean / pStar, 3),
    priceLastCvPct: round((sd / priceMean) * 100),
    reversals,
    arrivals: sum(tr.arrivals),
    started,
    starved: sum(tr.starved),
    pricedOut: sum(tr.pricedOut),
    meanWait: round(started ? sum(tr.waitSum) / started : 0),
    backlog: tr.waiting[end - 1] as number,
    interrupted: sum(tr.interrupted),
  };
}
