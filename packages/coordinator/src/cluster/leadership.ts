/**
 * Who leads (issue 14): every replica tries to take the 'leader' lease every renewMs; the holder renews it. A
 * leader that cannot renew before its lease runs out steps down on its own (it may be cut off from the database);
 * a write it still makes is refused by the fence (Store.fenced). A replica takes over at most ttlMs + renewMs after
 * the leader's last renewal.
 */
import type { Clock, LeaseGrant, Store } from '@gpux/core';
import type { Logger } from 'pino';

export const LEADER_LEASE = 'leader';

export interface LeadershipEvents {
  /** This replica leads from now, under `grant` (its fence). Resolves when leading has started. */
  elected(grant: LeaseGrant): Promise<void>;
  /** It no longer does (lost, expired or closing). Resolves when leading has stopped. */
  deposed(): Promise<void>;
}

export class Leadership {
  private grant: LeaseGrant | null = null;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly holder: string,
    private readonly clock: Clock,
    private readonly opts: { ttlMs: number; renewMs: number },
    private readonly events: LeadershipEvents,
    private readonly logger: Logger,
  ) {}

  get isLeader(): boolean {
    return this.grant !== null;
  }

  /** Try at once (a lone replica leads from its start), then every renewMs. */
  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.opts.renewMs);
    this.timer.unref();
  }

  /** A fenced write failed: someone else leads now. Step down without waiting for the next renewal. */
  lost(): void {
    if (this.grant) void this.stepDown('the fence refused a write: another replica took over');
  }

  /** Stop trying, step down and give the lease back so the next leader need not wait out the TTL. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.ticking;
    const g = this.grant;
    await this.stepDown('shutting down');
    if (g) await this.store.releaseLease(LEADER_LEASE, this.holder, g.epoch).catch(() => undefined);
  }

  private tick(): Promise<void> {
    this.ticking ??= this.renewOrAcquire().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private async renewOrAcquire(): Promise<void> {
    if (this.stopped) return;
    const now = this.clock.now();
    const held = this.grant;
    let next: LeaseGrant | null;
    try {
      next = await this.store.acquireLease(LEADER_LEASE, this.holder, now, this.opts.ttlMs, held?.epoch);
    } catch (err) {
      // Cut off from the database: keep leading only while the lease we hold has not run out.
      if (held && now >= held.expiresAt - this.opts.renewMs) await this.stepDown('cannot renew the lease before it runs out');
      else this.logger.warn({ err: String(err) }, 'leader lease: the database did not answer');
      return;
    }
    if (held && !next) return this.stepDown('the lease was taken over');
    if (!next || this.stopped) return;
    this.grant = next;
    if (!held) {
      this.logger.info({ epoch: next.epoch }, 'this replica leads now');
      await this.events.elected(next);
    }
  }

  private async stepDown(why: string): Promise<void> {
    if (!this.grant) return;
    const epoch = this.grant.epoch;
    this.grant = null;
    this.logger.warn({ epoch, why }, 'this replica no longer leads');
    await this.events.deposed();
  }
}
