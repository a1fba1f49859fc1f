/**
 * Starts waiting for the agent's next work exchange (issue 14): one request carries the starts of every
 * assignment a delivery brought, instead of one POST …/start each. The work loop is the only one to send them.
 */
import type { StartAttemptResponse, StartOutcome } from '@gpux/protocol';

export type TakeUp =
  /** The coordinator started it (cancel set: the job was cancelled meanwhile). */
  | { kind: 'started'; res: StartAttemptResponse }
  /** Not this node's to run any more (ended, lost, another node's): drop it. */
  | { kind: 'refused'; message: string }
  /** Start it on its own (POST …/start): the coordinator takes no carried starts, or did not answer this one. */
  | { kind: 'explicit' }
  /** It never reached the coordinator before its lease ran out: it did not run (the coordinator requeues it). */
  | { kind: 'gave-up' };

export class CarriedStarts {
  private readonly waiting = new Map<string, { deadline: number; resolve(t: TakeUp): void }>();

  /** Resolves once an exchange answered the start, or as TakeUp says. `deadline`: the assignment's lease. */
  enqueue(attemptId: string, deadline: number): Promise<TakeUp> {
    const prior = this.waiting.get(attemptId);
    if (prior) prior.resolve({ kind: 'gave-up' }); // never: the agent runs an assignment once
    return new Promise((resolve) => this.waiting.set(attemptId, { deadline, resolve }));
  }

  /** The ids the next exchange carries, oldest first (they stay here until it is answered). */
  take(max: number): string[] {
    return [...this.waiting.keys()].slice(0, max);
  }

  /** The exchange that carried `ids` answered: each by its outcome; one it did not name starts on its own. */
  answered(ids: readonly string[], outcomes: readonly StartOutcome[]): void {
    const byId = new Map(outcomes.map((o) => [o.attemptId, o]));
    for (const id of ids) {
      const o = byId.get(id);
      if (!o) this.settle(id, { kind: 'explicit' });
      else if (o.ok) this.settle(id, { kind: 'started', res: { ok: true, cancel: o.cancel, ...(o.cancelSeal ? { cancelSeal: o.cancelSeal } : {}) } });
      else this.settle(id, { kind: 'refused', message: `${o.error.code}: ${o.error.message}` });
    }
  }

  /** Starts whose lease has run out by `now` (the exchange kept failing) give up: the coordinator requeues them. */
  expire(now: number): void {
    for (const [id, w] of this.waiting) if (w.deadline <= now) this.settle(id, { kind: 'gave-up' });
  }

  /** Every waiting start at once: the coordinator has no exchange, or the agent stops (each is then sent on its own). */
  settleAll(t: TakeUp): void {
    for (const id of [...this.waiting.keys()]) this.settle(id, t);
  }

  private settle(id: string, t: TakeUp): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    w.resolve(t);
  }
}
