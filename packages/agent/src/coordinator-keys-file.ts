/**
 * <dataDir>/coordinator-keys.json: the coordinator keys this node trusts (issue 19), fingerprint → public key, with
 * when and how each was pinned. Not secret, but whoever can write it chooses whom the node obeys: 0600 in the
 * node's 0700 data dir, written to a temp file and renamed so a crash never leaves half a file.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GpuxError } from '@gpux/core';
import { keyFingerprint } from '@gpux/protocol';

export const COORDINATOR_KEYS_FILE = 'coordinator-keys.json';

/** How a key came to be trusted. */
export type PinSource = 'coordinator-key' | 'enrollment-token' | 'first-use' | 'endorsement';

export interface PinnedKey {
  publicKey: string;
  /** ISO time of pinning. */
  pinnedAt: string;
  source: PinSource;
  /** For an endorsement: the trusted key that signed this one. */
  endorsedBy?: string;
}

export const keysFilePath = (dataDir: string): string => join(dataDir, COORDINATOR_KEYS_FILE);

const SOURCES: readonly PinSource[] = ['coordinator-key', 'enrollment-token', 'first-use', 'endorsement'];

/** The pinned keys, or an empty map when the file does not exist yet. A corrupt file stops the agent (never silently re-pinned). */
export async function readPinnedKeys(dataDir: string): Promise<Map<string, PinnedKey>> {
  const file = keysFilePath(dataDir);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw e;
  }
  const fail = (why: string) =>
    new GpuxError('REQUEST_INVALID', `${file} is corrupt (${why}); move it away and start again with --coordinator-key FINGERPRINT (from the coordinator's operator) to pin the coordinator afresh`);
  let data: { keys?: unknown };
  try {
    data = JSON.parse(text);
  } catch {
    throw fail('not JSON');
  }
  if (typeof data.keys !== 'object' || data.keys === null || Array.isArray(data.keys)) throw fail('no "keys" object');
  const keys = new Map<string, PinnedKey>();
  for (const [fp, raw] of Object.entries(data.keys as Record<string, unknown>)) {
    const k = raw as Partial<PinnedKey> | null;
    if (typeof k?.publicKey !== 'string' || typeof k.pinnedAt !== 'string' || !SOURCES.includes(k.source as PinSource)) throw fail(`key ${fp.slice(0, 16)}: publicKey, pinnedAt or source missing`);
    if (keyFingerprint(k.publicKey) !== fp) throw fail(`key ${fp.slice(0, 16)}: the public key does not have this fingerprint`);
    keys.set(fp, { publicKey: k.publicKey, pinnedAt: k.pinnedAt, source: k.source as PinSource, ...(typeof k.endorsedBy === 'string' ? { endorsedBy: k.endorsedBy } : {}) });
  }
  return keys;
}

export async function writePinnedKeys(dataDir: string, keys: ReadonlyMap<string, PinnedKey>): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, 0o700);
  const file = keysFilePath(dataDir);
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, `${JSON.stringify({ version: 1, keys: Object.fromEntries(keys) }, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  await rename(tmp, file);
}
