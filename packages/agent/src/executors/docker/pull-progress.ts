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

/** The numbers behind one progress line (also reported as an image.pull.progress job event). */
export interface PullStats {
  layersDone: number;
  layers: number;
  bytesDone: number;
  bytesTotal: number;
}

const DONE = /^(Pull complete|Already exists|Download complete)$/;

export class PullProgress {
  private readonly layers = new Map<string, Layer>();
  private lastReport: number;

  constructor(
    private readonly ref: string,
    startedAt: number,
    private readonly intervalMs = 2000,
    /** Called with each throttled progress report. */
    private readonly onReport?: (stats: PullStats) => void,
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
    this.onReport?.(this.stats());
    return [this.summary()];
  }

  stats(): PullStats {
    const layers = [...this.layers.values()];
    return {
      layersDone: layers.filter((l) => l.done).length,
      layers: layers.length,
      bytesDone: layers.reduce((n, l) => n + l.current, 0),
      bytesTotal: layers.reduce((n, l) => n + l.total, 0),
    };
  }

  summary(): string {
    const s = this.stats();
    const bytes = s.bytesTotal > 0 ? `, ${mib(s.bytesDone)} of ${mib(s.bytesTotal)} downloaded` : '';
    return `image: pulling ${this.ref}: ${s.layersDone}/${s.layers} layers done${bytes}`;
  }

  /** The engine's error, when the event reports one. */
  static errorOf(ev: PullEvent): string | undefined {
    return ev.errorDetail?.message ?? ev.error ?? undefined;
  }
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
