/**
 * Checkpoint archives (issue 13): a plain tar (node-tar, ustar/pax) of an attempt's checkpoints dir. Written as a
 * stream to a file and hashed on the way, never held in memory; deterministic for an unchanged dir (sorted
 * entries, no mtimes, uids or hardlinks), so an unchanged state hashes the same and is not uploaded again.
 *
 * Extraction treats the archive as hostile: it comes through the coordinator but another node wrote it. Only
 * regular files and dirs, relative paths without "..", at most `maxEntries` entries and `maxBytes` bytes, no
 * compression (a small archive cannot expand into a huge one); anything else refuses the whole archive before a
 * byte is written. Modes are kept without setuid/setgid/sticky bits.
 */
import { createHash } from 'node:crypto';
import { chmod, lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { create, extract, list, type ReadEntry } from 'tar';
import { DataPlaneError } from './download.js';

export interface ArchiveLimits {
  /** Total size of the files in the dir. */
  maxBytes: number;
  /** Files and dirs in the dir. */
  maxEntries: number;
}

export interface WrittenArchive {
  sha256: string;
  size: number;
  /** Files and dirs archived. */
  entries: number;
  /** Symlinks and special files left out (a checkpoint holds regular files and dirs only). */
  skipped: number;
}

/** The archive of a dir this large is at most this large: a header, a pax header and padding per entry, and the end blocks. */
export function maxArchiveBytes(limits: ArchiveLimits): number {
  return limits.maxBytes + (limits.maxEntries + 1) * 3 * 512 + 1024 * 1024;
}

/** The dir is past its limits: trying again at once would not help. */
export class ArchiveLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveLimitError';
  }
}

const MAX_PATH_BYTES = 4096;
const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/** Archives `dir` into `target` (overwritten). Throws when the dir is past the limits or changes under the walk. */
export async function writeArchive(dir: string, target: string, limits: ArchiveLimits): Promise<WrittenArchive> {
  const { paths, skipped } = await listTree(dir, limits);
  const hash = createHash('sha256');
  let size = 0;
  const fh = await open(target, 'w', 0o600);
  try {
    if (paths.length > 0) {
      // A cache that never remembers: a file with several links is stored as a file each time, never as a Link entry.
      const linkCache = new NoCache();
      const pack = create({ cwd: dir, portable: true, noMtime: true, noDirRecurse: true, strict: true, linkCache }, paths);
      for await (const chunk of pack as AsyncIterable<Buffer>) {
        hash.update(chunk);
        size += chunk.length;
        await fh.write(chunk);
      }
    } else {
      // An empty dir: the end-of-archive blocks alone (node-tar needs at least one path).
      const end = Buffer.alloc(1024);
      hash.update(end);
      size = end.length;
      await fh.write(end);
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  return { sha256: hash.digest('hex'), size, entries: paths.length, skipped };
}

/** Regular files and dirs under `dir`, sorted, relative; links and special files are counted and left out. */
async function listTree(dir: string, limits: ArchiveLimits): Promise<{ paths: string[]; skipped: number }> {
  const paths: string[] = [];
  let skipped = 0;
  let bytes = 0;
  const walk = async (rel: string): Promise<void> => {
    const names = (await readdir(rel ? join(dir, rel) : dir)).sort();
    for (const name of names) {
      const path = rel ? `${rel}/${name}` : name;
      const st = await lstat(join(dir, path));
      if (!st.isDirectory() && !st.isFile()) {
        skipped++;
        continue;
      }
      paths.push(path);
      if (st.isFile()) bytes += st.size;
      if (paths.length > limits.maxEntries) throw new ArchiveLimitError(`the checkpoints dir holds more than ${limits.maxEntries} files and dirs`);
      if (bytes > limits.maxBytes) throw new ArchiveLimitError(`the checkpoints dir holds more than ${limits.maxBytes} bytes`);
      if (st.isDirectory()) await walk(path);
    }
  };
  await walk('');
  return { paths, skipped };
}

class NoCache extends Map<`${number}:${number}`, string> {
  override get(): undefined {
    return undefined;
  }
  override set(): this {
    return this;
  }
}

/**
 * Checks every entry of the archive at `file` (nothing is written), then extracts it into `dir` (empty). Throws a
 * DataPlaneError naming the first entry refused, or what else was wrong. `what` names the archive in messages.
 */
export async function extractArchive(file: string, dir: string, limits: ArchiveLimits, what: string): Promise<void> {
  await checkHeader(file, what);
  const problem = await checkEntries(file, limits);
  if (problem) throw new DataPlaneError(`${what}: refused: ${problem}`);
  try {
    await extract({ file, cwd: dir, strict: true, preservePaths: false, noMtime: true, filter: (_path, entry) => entryProblem(entry as ReadEntry) === null && !isRoot(entry as ReadEntry) });
  } catch (e) {
    throw new DataPlaneError(`${what}: could not be extracted: ${(e as Error).message}`);
  }
  await tidyModes(dir, what);
}

/** A tar starts with a ustar header (or is empty: zero blocks); gzip, zstd, brotli and anything else are refused. */
async function checkHeader(file: string, what: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    const block = Buffer.alloc(512);
    const { bytesRead } = await fh.read(block, 0, 512, 0);
    if (bytesRead === 512 && block.subarray(257, 262).toString('latin1') === 'ustar') return;
    if (bytesRead === 512 && block.every((b) => b === 0)) return;
    throw new DataPlaneError(`${what}: refused: not an uncompressed tar archive`);
  } finally {
    await fh.close();
  }
}

async function checkEntries(file: string, limits: ArchiveLimits): Promise<string | null> {
  let problem: string | null = null;
  let entries = 0;
  let bytes = 0;
  try {
    await list({
      file,
      strict: true,
      onReadEntry: (entry) => {
        entry.resume();
        if (problem) return;
        problem = entryProblem(entry);
        if (problem || isRoot(entry)) return;
        entries++;
        bytes += entry.size ?? 0;
        if (entries > limits.maxEntries) problem = `more than ${limits.maxEntries} entries (the most a checkpoint may hold on this node)`;
        else if (bytes > limits.maxBytes) problem = `more than ${limits.maxBytes} bytes of files (the most a checkpoint may hold on this node)`;
      },
    });
  } catch (e) {
    return problem ?? `not a valid tar archive: ${(e as Error).message}`;
  }
  return problem;
}

/** Why this entry may not be extracted, or null. */
function entryProblem(entry: ReadEntry): string | null {
  const path = entry.path;
  const shown = JSON.stringify(path.slice(0, 200));
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) return `an entry path longer than ${MAX_PATH_BYTES} bytes`;
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path) || path.includes('\\')) return `the entry ${shown} has an absolute path`;
  if (path.split('/').includes('..')) return `the entry ${shown} climbs out with ".."`;
  if (entry.type === 'Directory') return null;
  if (FILE_TYPES.has(entry.type)) return null;
  if (entry.type === 'SymbolicLink' || entry.type === 'Link') {
    return `the entry ${shown} is a ${entry.type === 'Link' ? 'hard' : 'symbolic'} link (to ${JSON.stringify(String(entry.linkpath ?? '').slice(0, 200))}); a checkpoint holds only files and dirs`;
  }
  return `the entry ${shown} is a ${entry.type}; a checkpoint holds only files and dirs`;
}

/** "./" (or "."): the dir itself, left as it is. */
function isRoot(entry: ReadEntry): boolean {
  return entry.type === 'Directory' && /^(\.\/?)+$/.test(entry.path);
}

/** After extraction: only files and dirs (anything else refuses), modes without special bits, readable and writable by the owner. */
async function tidyModes(dir: string, what: string): Promise<void> {
  for (const name of await readdir(dir)) {
    const abs = join(dir, name);
    const st = await lstat(abs);
    if (st.isDirectory()) {
      await chmod(abs, (st.mode & 0o777) | 0o700);
      await tidyModes(abs, what);
    } else if (st.isFile()) await chmod(abs, (st.mode & 0o777) | 0o600);
    else throw new DataPlaneError(`${what}: refused: extraction left ${JSON.stringify(name)}, which is not a file or dir`);
  }
}
