/**
 * What the work long-poll has already handed out. An assigned attempt is re-delivered until the agent
 * starts it (delivery is idempotent), but a poll returns at once only for news: an attempt never
 * delivered, or one last delivered more than a redelivery interval ago, or a cancel not yet sent.
 * Without this an agent still preparing an assignment would get it back in a tight loop.
 */
export class DeliveryTracker {
  private readonly deliveredAt = new Map<string, number>();
  private readonly cancelSent = new Set<string>();

  /** When the earliest of these assigned attempts is due for (re)delivery; `now` if one never went out. */
  nextDue(assignedIds: readonly string[], now: number, redeliverMs: number): number {
    let due = Number.POSITIVE_INFINITY;
    for (const id of assignedIds) {
      const at = this.deliveredAt.get(id);
      if (at === undefined) return now;
      due = Math.min(due, at + redeliverMs);
    }
    return due;
  }

  hasUnsentCancel(cancelIds: readonly string[]): boolean {
    return cancelIds.some((id) => !this.cancelSent.has(id));
  }

  delivered(assignedIds: readonly string[], cancelIds: readonly string[], now: number): void {
    for (const id of assignedIds) this.deliveredAt.set(id, now);
    for (const id of cancelIds) this.cancelSent.add(id);
  }

  /** The attempt started or ended: nothing more to track. */
  forget(attemptId: string): void {
    this.deliveredAt.delete(attemptId);
    this.cancelSent.delete(attemptId);
  }
}
