/** Turns the engine's pull events into a few readable log lines for the buyer (one progress line per interval, at most). */

export interface PullEvent {
  status?: string;
  id?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { message?: string };
}

interface Layer {
  status: string;
  current: number;
  total: number;
  done: boolean;
}

const DONE = /^(Pull complete|Already exists|Download complete)$/;

export class PullProgress {
  private readonly layers = new Map<string, Layer>();
  private lastReport: number;

  constructor(
    private readonly ref: string,
    startedAt: number,
    private readonly intervalMs = 2000,
  ) {
    this.lastReport = startedAt;
  }

  /** Lines to log for this event: engine messages that are not about one layer, and a throttled progress summary. */
  update(ev: PullEvent, now: number): string[] {
    if (ev.error || ev.errorDetail?.message) return [];
    if (!ev.status) return [];
    // Per-layer events carry a short layer id; "Pulling from …", "Digest: …" and "Status: …" do not.
    if (!ev.id || !/^[0-9a-f]{12}$/.test(ev.id)) return [`image: ${ev.id ? `${ev.id}: ` : ''}${ev.status}`];
    const layer = this.layers.get(ev.id) ?? { status: '', current: 0, total: 0, done: false };
    layer.status = ev.status;
    if (ev.status === 'Downloading') {
      layer.current = ev.progressDetail?.current ?? layer.current;
      layer.total = ev.progressDetail?.total ?? layer.total;
    }
    if (DONE.test(ev.status)) {
      layer.done = layer.done || ev.status !== 'Download complete';
      if (layer.total > 0) layer.current = layer.total;
    }
    this.layers.set(ev.id, layer);
    if (now - this.lastReport < this.intervalMs) return [];
    this.lastReport = now;
    return [this.summary()];
  }

  summary(): string {
    const layers = [...this.layers.values()];
    const done = layers.filter((l) => l.done).length;
    const current = layers.reduce((n, l) => n + l.current, 0);
    const total = layers.reduce((n, l) => n + l.total, 0);
    const bytes = total > 0 ? `, ${mib(current)} of ${mib(total)} downloaded` : '';
    return `image: pulling ${this.ref}: ${done}/${layers.length} layers done${bytes}`;
  }

  /** The engine's error, when the event reports one. */
  static errorOf(ev: PullEvent): string | undefined {
    return ev.errorDetail?.message ?? ev.error ?? undefined;
  }
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
