/**
 * A node's chance of staying online for the next hours (issue 17), learned online from when it came and went.
 *
 * A piecewise-constant hazard by hour of day (UTC): for each of the 24 hours, how many times the node went
 * offline in that hour over how many hours it was online in it. Consumer GPUs follow daily patterns (a gaming
 * PC off every evening), so a node that leaves at 18:00 most days has a high hazard at 18 and a low one at 03.
 * The chance of staying up from `at` for `horizon` is exp(−∫ hazard), the hazards summed over the hours the
 * horizon crosses. Old behaviour fades (half-life, default 7 days). A node with little history leans on the
 * fleet's hazard for that hour (a prior worth `priorHours` online hours in that hour), so a new node is judged
 * as an average one, not as a perfect one. Memory: 48 numbers per node, nodes bounded.
 */

const HOUR_MS = 3_600_000;
const DAY_HOURS = 24;

export interface NodeUptimeOptions {
  /** How fast old sessions fade. Default 7 days. */
  halfLifeMs?: number;
  /** Weight of the fleet's hazard in a node's, in online hours per hour of day. Default 4. */
  priorHours?: number;
  /** Nodes kept; the least recently seen are forgotten. Default 200,000. */
  maxNodes?: number;
}

interface Hours {
  /** Online hours and departures per hour of day, faded to `fadedAt`. */
  exposure: number[];
  departures: number[];
  fadedAt: number;
}

interface NodeState extends Hours {
  /** Online since (null: offline now). */
  since: number | null;
}

const emptyHours = (at: number): Hours => ({ exposure: new Array(DAY_HOURS).fill(0), departures: new Array(DAY_HOURS).fill(0), fadedAt: at });

export class NodeUptimeModel {
  private readonly halfLifeMs: number;
  private readonly priorHours: number;
  private readonly maxNodes: number;
  private readonly nodes = new Map<string, NodeState>();
  private readonly fleet: Hours = emptyHours(0);

  constructor(opts: NodeUptimeOptions = {}) {
    this.halfLifeMs = opts.halfLifeMs ?? 7 * 24 * HOUR_MS;
    this.priorHours = opts.priorHours ?? 4;
    this.maxNodes = opts.maxNodes ?? 200_000;
  }

  /**
   * The node is online at `at`: registered, back after being offline, or a heartbeat. While it stays online,
   * each call books the time since the last one, so the fleet's figures include nodes that never left.
   */
  online(nodeId: string, at: number): void {
    const n = this.stateOf(nodeId, at);
    if (n.since !== null && at > n.since) {
      this.accrue(n, n.since, at);
      this.accrue(this.fleet, n.since, at);
    }
    if (n.since === null || at > n.since) n.since = at;
  }

  /** The node went offline at `at` (missed heartbeats, drained, failed). */
  offline(nodeId: string, at: number): void {
    const n = this.stateOf(nodeId, at);
    if (n.since === null) return;
    this.accrue(n, n.since, at);
    this.accrue(this.fleet, n.since, at);
    // Booked in the hour it was last online in (leaving at 18:00 sharp ends the 17:00 hour).
    const h = hourOf(at - 1);
    this.fade(n, at);
    this.fade(this.fleet, at);
    (n.departures[h] as number)++;
    (this.fleet.departures[h] as number)++;
    n.since = null;
  }

  /** The chance the node stays online from `at` for `horizonMs`; a node offline now: 0. */
  pStaysUp(nodeId: string, at: number, horizonMs: number): number {
    const n = this.nodes.get(nodeId);
    if (n && n.since === null) return 0;
    // The open session counts as online time too (it has not ended yet, so no departure).
    const open = n?.since != null ? hoursByHourOfDay(Math.max(n.since, at - 7 * DAY_HOURS * HOUR_MS), at) : null;
    let cumulative = 0;
    for (let t = at; t < at + horizonMs; ) {
      const next = Math.min(at + horizonMs, (Math.floor(t / HOUR_MS) + 1) * HOUR_MS);
      cumulative += this.hazard(n, open, hourOf(t), at) * ((next - t) / HOUR_MS);
      t = next;
    }
    return Math.exp(-cumulative);
  }

  /** Departures per online hour at hour-of-day `h`: the node's, pulled toward the fleet's by the prior. */
  private hazard(n: NodeState | undefined, open: number[] | null, h: number, at: number): number {
    const w = (x: Hours) => 0.5 ** (Math.max(0, at - x.fadedAt) / this.halfLifeMs);
    const fleetW = w(this.fleet);
    // The fleet's own rate, with a weak prior of one departure per 1000 hours where it knows nothing.
    const fleetRate = ((this.fleet.departures[h] as number) * fleetW + 0.001) / ((this.fleet.exposure[h] as number) * fleetW + 1);
    if (!n) return fleetRate;
    const nw = w(n);
    return ((n.departures[h] as number) * nw + fleetRate * this.priorHours) / ((n.exposure[h] as number) * nw + (open?.[h] ?? 0) + this.priorHours);
  }

  private stateOf(nodeId: string, at: number): NodeState {
    let n = this.nodes.get(nodeId);
    if (n) {
      this.nodes.delete(nodeId);
    } else {
      n = { ...emptyHours(at), since: null };
      if (this.nodes.size >= this.maxNodes) this.nodes.delete(this.nodes.keys().next().value as string);
    }
    this.nodes.set(nodeId, n);
    return n;
  }

  /** Add the online time [from, to) to the hour-of-day bins, faded to `to` (older hours count less). */
  private accrue(x: Hours, from: number, to: number): void {
    this.fade(x, to);
    for (let t = Math.max(from, to - 8 * this.halfLifeMs); t < to; ) {
      const next = Math.min(to, (Math.floor(t / HOUR_MS) + 1) * HOUR_MS);
      const h = hourOf(t);
      x.exposure[h] = (x.exposure[h] as number) + ((next - t) / HOUR_MS) * 0.5 ** ((to - next) / this.halfLifeMs);
      t = next;
    }
  }

  private fade(x: Hours, at: number): void {
    if (at <= x.fadedAt) return;
    const k = 0.5 ** ((at - x.fadedAt) / this.halfLifeMs);
    for (let h = 0; h < DAY_HOURS; h++) {
      x.exposure[h] = (x.exposure[h] as number) * k;
      x.departures[h] = (x.departures[h] as number) * k;
    }
    x.fadedAt = at;
  }
}

const hourOf = (t: number) => ((Math.floor(t / HOUR_MS) % DAY_HOURS) + DAY_HOURS) % DAY_HOURS;

/** Hours of [from, to) in each hour of day. */
function hoursByHourOfDay(from: number, to: number): number[] {
  const bins = new Array(DAY_HOURS).fill(0);
  for (let t = from; t < to; ) {
    const next = Math.min(to, (Math.floor(t / HOUR_MS) + 1) * HOUR_MS);
    bins[hourOf(t)] += (next - t) / HOUR_MS;
    t = next;
  }
  return bins;
}
