/**
 * Disk quotas of an attempt's writable host dirs (outputs, scratch). Bind mounts on vfs/overlay have no per-mount
 * quota, so a watcher measures each tree while the container runs and reports the first one past its quota (the run
 * then kills the container at once); a last measurement after the exit catches what was written since. Host disk use
 * is thereby bounded by the quota plus what the job can write in one check interval.
 */
import { chmod, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export interface QuotaTree {
  /** Shown in the error: "outputs", "scratch". */
  name: string;
  path: string;
  /** Total size of the regular files in it (a sparse file counts at its full size). */
  maxBytes: number;
  /** Files, dirs and links in it: bounds inodes and the cost of one measurement. */
  maxEntries: number;
  /** The node option that sets maxBytes, named in the error so the operator knows what to raise. */
  option: string;
}

export interface TreeUsage {
  bytes: number;
  entries: number;
  /** True when the walk stopped early because a limit was already passed (bytes/entries are then lower bounds). */
  stoppedEarly: boolean;
  /** A dir the job made unreadable (chmod 000) that could not be opened again: its size is unknown. */
  unreadable?: string;
}

/** Walks the tree with lstat (links are never followed); stops as soon as a limit is passed. Vanished entries are skipped. */
export async function measureTree(root: string, stopAt: { bytes: number; entries: number } = { bytes: Number.POSITIVE_INFINITY, entries: Number.POSITIVE_INFINITY }): Promise<TreeUsage> {
  const usage: TreeUsage = { bytes: 0, entries: 0, stoppedEarly: false };
  const stack = [root];
  while (stack.length > 0) {
    const dir = stack.pop() as string;
    let names: string[];
    try {
      names = await readDir(dir);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM') {
        usage.unreadable = dir;
        return usage;
      }
      continue; // removed meanwhile, or not a dir any more
    }
    for (const name of names) {
      usage.entries++;
      const abs = join(dir, name);
      try {
        const st = await lstat(abs);
        if (st.isDirectory()) stack.push(abs);
        else if (st.isFile()) usage.bytes += st.size;
      } catch {
        continue;
      }
      if (usage.bytes > stopAt.bytes || usage.entries > stopAt.entries) {
        usage.stoppedEarly = true;
        return usage;
      }
    }
  }
  return usage;
}

/** A job running as the agent's own user may chmod 000 a dir to hide what it holds: open it again (it is ours). */
async function readDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM') throw e;
    await chmod(dir, 0o700);
    return await readdir(dir);
  }
}

/** The error of the first tree past its quota, or null. */
export async function checkQuotas(trees: readonly QuotaTree[]): Promise<string | null> {
  for (const tree of trees) {
    const usage = await measureTree(tree.path, { bytes: tree.maxBytes, entries: tree.maxEntries });
    if (usage.unreadable !== undefined) {
      return `${tree.name} could not be measured against its quota (the job made ${usage.unreadable} unreadable); the job was stopped and its outputs are not reported`;
    }
    if (usage.bytes > tree.maxBytes) {
      return `${tree.name} exceeded the ${formatBytes(tree.maxBytes)} quota of this node (${tree.option}); the job was stopped and its outputs are not reported`;
    }
    if (usage.entries > tree.maxEntries) {
      return `${tree.name} exceeded the quota of ${tree.maxEntries} files and dirs of this node; the job was stopped and its outputs are not reported`;
    }
  }
  return null;
}

/**
 * Measures the trees every intervalMs until stopped or a quota is passed. The next check starts after the last one
 * ended, and waits at least 4× as long as it took, so a huge tree costs the node at most a fifth of a core.
 */
export class DiskQuotaWatcher {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private running: Promise<void> = Promise.resolve();
  private lastWalkMs = 0;

  constructor(
    private readonly trees: readonly QuotaTree[],
    private readonly intervalMs: number,
    private readonly onExceeded: (error: string) => void,
  ) {}

  start(): void {
    this.schedule();
  }

  /** Stops the checks and waits for one in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      const started = Date.now();
      this.running = checkQuotas(this.trees).then(
        (error) => {
          this.lastWalkMs = Date.now() - started;
          if (this.stopped) return;
          if (error) {
            this.stopped = true;
            this.onExceeded(error);
          } else this.schedule();
        },
        () => this.schedule(),
      );
    }, Math.max(this.intervalMs, 4 * this.lastWalkMs));
    this.timer.unref();
  }
}

/** 1073741824 → "1 GiB", 1536 → "1.5 KiB", 1000 → "1000 bytes". */
export function formatBytes(n: number): string {
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let unit = 'bytes';
  for (const u of units) {
    if (v < 1024) break;
    v /= 1024;
    unit = u;
  }
  if (unit === 'bytes') return `${n} bytes`;
  return `${Math.round(v * 10) / 10} ${unit}`;
}
