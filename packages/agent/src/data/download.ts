/**
 * Streams bytes from a source into a file (issue 13): hashed while written, never held whole in memory, resumed with
 * a Range request after a cut connection, refused past the declared size, checked against the declared sha256.
 * On any failure the file is removed and a DataPlaneError says what was wrong.
 */
import { createHash, type Hash } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { CoordinatorApiError, isUnreachable } from '../coordinator-client.js';
import { sleep } from '../loop/backoff.js';

/** A data-plane failure the attempt fails with: its message names the file and what was wrong. */
export class DataPlaneError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DataPlaneError';
  }
}

/** A transient failure (cut connection, 5xx): the transfer is resumed. Anything else fails it at once. */
export class TransientError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'TransientError';
  }
}

export function isTransient(e: unknown): boolean {
  if (e instanceof TransientError || isUnreachable(e)) return true;
  if (e instanceof CoordinatorApiError) return e.status >= 500 || e.status === 408 || e.status === 429;
  // fetch's own failures (reset, socket closed mid-body) are TypeErrors or undici errors, not API answers;
  // a failing local disk (write, truncate) is not worth retrying.
  const syscall = (e as { syscall?: string }).syscall;
  if (syscall === 'write' || syscall === 'ftruncate' || syscall === 'fsync' || syscall === 'open') return false;
  return e instanceof Error && !(e instanceof DataPlaneError) && e.name !== 'AbortError';
}

export interface ByteSource {
  /** The bytes from `offset` on: 200 (whole file) or 206 (from offset). Throws on error statuses. */
  open(offset: number, signal: AbortSignal): Promise<Response>;
}

export interface DownloadOptions {
  signal: AbortSignal;
  /** Consecutive failures without new bytes before giving up. Default 5. */
  retries?: number;
  /** First wait after a failure; doubles. Default 500 ms. */
  retryDelayMs?: number;
}

/** `what` names the file in messages (e.g. `input "data/x.bin" (blob ab12…)`). */
export async function downloadToFile(source: ByteSource, target: string, expected: { sha256: string; size: number }, what: string, opts: DownloadOptions): Promise<void> {
  const fh = await open(target, 'w', 0o600);
  let ok = false;
  try {
    await transfer(source, fh, expected, what, opts);
    await fh.sync();
    ok = true;
  } catch (e) {
    if (opts.signal.aborted) throw new DataPlaneError(`${what}: download stopped (the attempt is stopping)`);
    if (e instanceof DataPlaneError) throw e;
    throw new DataPlaneError(`${what}: download failed: ${(e as Error).message}`);
  } finally {
    await fh.close();
    if (!ok) await rm(target, { force: true });
  }
}

async function transfer(source: ByteSource, fh: import('node:fs/promises').FileHandle, expected: { sha256: string; size: number }, what: string, opts: DownloadOptions): Promise<void> {
  let hash: Hash = createHash('sha256');
  let written = 0;
  let failures = 0;
  for (;;) {
    const before = written;
    try {
      const res = await source.open(written, opts.signal);
      if (written > 0 && res.status !== 206) {
        // The server ignored the Range: start over from byte 0 (the hash is restarted with the file).
        hash = createHash('sha256');
        written = 0;
        await fh.truncate(0);
      }
      if (res.status === 206) checkRangeStart(res, written, what);
      const length = Number(res.headers.get('content-length') ?? Number.NaN);
      if (Number.isFinite(length) && written + length > expected.size) {
        await res.body?.cancel().catch(() => {});
        throw new DataPlaneError(`${what}: the source sends ${written + length} bytes, more than the declared size of ${expected.size} bytes`);
      }
      if (!res.body) throw new TransientError('the answer has no body');
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        if (written + chunk.length > expected.size) {
          throw new DataPlaneError(`${what}: the source sent more than the declared size of ${expected.size} bytes; refused`);
        }
        await fh.write(chunk, 0, chunk.length, written);
        hash.update(chunk);
        written += chunk.length;
      }
      if (written === expected.size) break;
      throw new TransientError(`the transfer ended after ${written} of ${expected.size} bytes`);
    } catch (e) {
      if (opts.signal.aborted || !isTransient(e)) throw e;
      failures = written > before ? 1 : failures + 1;
      if (failures > (opts.retries ?? 5)) {
        throw new DataPlaneError(`${what}: download failed after ${written} of ${expected.size} bytes: ${(e as Error).message}`);
      }
      await sleep((opts.retryDelayMs ?? 500) * 2 ** (failures - 1), opts.signal);
    }
  }
  const got = hash.digest('hex');
  if (got !== expected.sha256) {
    throw new DataPlaneError(`${what}: the bytes hash to sha256 ${got}, not the declared ${expected.sha256}; the file was removed`);
  }
}

/** A 206 must start where we asked (Content-Range: bytes START-END/TOTAL). */
function checkRangeStart(res: Response, offset: number, what: string): void {
  const m = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(res.headers.get('content-range') ?? '');
  if (!m || Number(m[1]) !== offset) {
    void res.body?.cancel().catch(() => {});
    throw new DataPlaneError(`${what}: a resumed download answered Content-Range "${res.headers.get('content-range') ?? ''}", not from byte ${offset}`);
  }
}
