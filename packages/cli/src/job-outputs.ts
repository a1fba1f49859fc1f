/** Write a job's returned output files into a directory: no path may escape it, every sha256 is checked. */
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { CONTROL_CHARS, type OutputFile, outputRootDigest } from '@gpux/protocol';
import { downloadOutputBlob, type GpuxBlobs } from '@gpux/sdk';
import { CliError } from './errors.js';
import { escapeControl } from './output.js';

/** A node-chosen path as it may appear in a message: quoted, control characters escaped. */
const shown = (path: string) => `"${escapeControl(path)}"`;

export interface WrittenOutputs {
  written: { path: string; size: number; target: string }[];
  /** Files the coordinator did not return inline (too large) and not written. */
  skipped: string[];
}

/** The absolute target of `path` inside `root`, or an error if it would land outside. */
export function safeTarget(root: string, path: string): string {
  const target = resolve(root, path);
  const rel = relative(root, target);
  if (CONTROL_CHARS.test(path)) throw new CliError(`refusing to write output ${shown(path)}: its name has control characters`);
  if (path.includes('\0') || isAbsolute(path) || rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
    throw new CliError(`refusing to write output ${shown(path)}: it would land outside ${root}`);
  }
  return target;
}

/** The output digest covers each file's sha256, or its plaintext sha256 when it is encrypted (issue 13). */
export function verifyOutputDigest(outputs: readonly OutputFile[], expected: string | null): boolean {
  return expected === null || outputRootDigest(outputs.map((o) => ({ path: o.path, sha256: o.encrypted?.sha256 ?? o.sha256 }))) === expected;
}

export function writeOutputs(outDir: string, outputs: readonly OutputFile[]): WrittenOutputs {
  mkdirSync(outDir, { recursive: true });
  const root = realpathSync(resolve(outDir));
  const result: WrittenOutputs = { written: [], skipped: [] };
  for (const file of outputs) {
    const target = safeTarget(root, file.path);
    if (file.content === undefined) {
      result.skipped.push(file.path);
      continue;
    }
    const data = Buffer.from(file.content, 'base64');
    const sha256 = createHash('sha256').update(data).digest('hex');
    if (sha256 !== file.sha256 || data.length !== file.size) {
      throw new CliError(`output ${shown(file.path)} is corrupt: expected ${file.size} bytes with sha256 ${file.sha256}, got ${data.length} bytes with sha256 ${sha256}`);
    }
    mkdirSync(dirname(target), { recursive: true });
    // A symlink planted inside the output dir must not carry the write outside it.
    const parent = realpathSync(dirname(target));
    if (parent !== root && !parent.startsWith(root + sep)) throw new CliError(`refusing to write output ${shown(file.path)}: ${escapeControl(dirname(target))} leads outside ${root}`);
    if (lstatSync(target, { throwIfNoEntry: false })?.isSymbolicLink()) throw new CliError(`refusing to write output ${shown(file.path)}: ${escapeControl(target)} is a symbolic link`);
    writeFileSync(target, data);
    result.written.push({ path: file.path, size: data.length, target });
  }
  return result;
}

/**
 * The outputs `writeOutputs` skipped that are in the blob store (`blob: true`, issue 13): streamed from
 * GET /v1/blobs/:sha256, sha256 and size checked before each file appears (a mismatch leaves nothing and throws).
 * Returns `written` extended and `skipped` down to the files that are nowhere (the node could not upload them).
 */
export async function writeBlobOutputs(outDir: string, outputs: readonly OutputFile[], done: WrittenOutputs, blobs: GpuxBlobs): Promise<WrittenOutputs> {
  const root = realpathSync(resolve(outDir));
  const result: WrittenOutputs = { written: [...done.written], skipped: [] };
  for (const file of outputs) {
    if (!done.skipped.includes(file.path)) continue;
    if (file.blob !== true) {
      result.skipped.push(file.path);
      continue;
    }
    const target = safeTarget(root, file.path);
    mkdirSync(dirname(target), { recursive: true });
    const parent = realpathSync(dirname(target));
    if (parent !== root && !parent.startsWith(root + sep)) throw new CliError(`refusing to write output ${shown(file.path)}: ${escapeControl(dirname(target))} leads outside ${root}`);
    if (lstatSync(target, { throwIfNoEntry: false })?.isSymbolicLink()) throw new CliError(`refusing to write output ${shown(file.path)}: ${escapeControl(target)} is a symbolic link`);
    await downloadOutputBlob(blobs, file, target);
    result.written.push({ path: file.path, size: file.size, target });
  }
  return result;
}
