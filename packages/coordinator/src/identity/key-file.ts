/**
 * The coordinator's ed25519 key chain on disk (issue 19): one JSON file, default <dataDir>/coordinator-key.json
 * (GPUX_COORDINATOR_KEY_FILE), mode 0600 in a 0700 directory. Replicas on one PostgreSQL share the file. Made
 * on first start; never replaced silently: enrolled agents pinned its first key, so a corrupt file is an error
 * that says to restore it from a backup. Rotation appends a key endorsed by the newest one (activating later,
 * so agents learn it before it signs).
 */
import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { GpuxError } from '@gpux/core';
import { type CoordinatorKey, endorsementBytes, generateNodeKeyPair, keyFingerprint, rawPublicKey } from '@gpux/protocol';
import { z } from 'zod';

export const KEY_FILE_NAME = 'coordinator-key.json';
/** Keys one chain may hold (the identity response's limit): a key a year is sixteen years. */
export const MAX_CHAIN_KEYS = 16;
/** How long after a rotation the new key starts to sign by default: agents fetch the chain well before. */
export const DEFAULT_ACTIVATION_DELAY_MS = 24 * 3_600_000;

const StoredKey = z
  .object({
    publicKey: z.string(),
    privateKeyPem: z.string().min(1),
    activeFrom: z.number().int().nonnegative(),
    endorsement: z.object({ by: z.string(), signature: z.string() }).strict().nullable(),
  })
  .strict();
export type StoredKey = z.infer<typeof StoredKey>;
const KeyFileSchema = z.object({ version: z.literal(1), keys: z.array(StoredKey).min(1).max(MAX_CHAIN_KEYS) }).strict();
export type KeyFile = z.infer<typeof KeyFileSchema>;

const RESTORE = 'restore it from your backup (do not delete it: enrolled agents pinned its key and would refuse a new one)';

function corrupt(path: string, what: string, cause?: unknown): GpuxError {
  return new GpuxError('REQUEST_INVALID', `the coordinator key file ${JSON.stringify(path)} ${what}: ${RESTORE}`, cause === undefined ? {} : { cause });
}

/** The public part of a stored key: what agents see. */
export function publicKeyOf(k: StoredKey): CoordinatorKey {
  return { publicKey: k.publicKey, fingerprint: keyFingerprint(k.publicKey), activeFrom: k.activeFrom, endorsement: k.endorsement };
}

/** Each private key matches its public key; each key after the first is endorsed by the one before it. */
function checkChain(path: string, file: KeyFile): void {
  let prev: StoredKey | undefined;
  for (const [i, k] of file.keys.entries()) {
    let derived: string;
    try {
      derived = rawPublicKey(createPublicKey(createPrivateKey(k.privateKeyPem)));
    } catch (err) {
      throw corrupt(path, `has an unreadable private key (keys.${i})`, err);
    }
    if (derived !== k.publicKey) throw corrupt(path, `has a private key that does not match its public key (keys.${i})`);
    if (!prev) {
      if (k.endorsement !== null) throw corrupt(path, 'starts with an endorsed key (the first key has no endorsement)');
    } else {
      const by = keyFingerprint(prev.publicKey);
      const e = k.endorsement;
      let good = false;
      try {
        good = e !== null && e.by === by && verify(null, endorsementBytes(k, by), createPublicKey(createPrivateKey(prev.privateKeyPem)), Buffer.from(e.signature, 'base64'));
      } catch {
        good = false;
      }
      if (!good) throw corrupt(path, `has key ${i} without a valid endorsement by key ${i - 1}`);
      if (k.activeFrom < prev.activeFrom) throw corrupt(path, `has key ${i} active before key ${i - 1}`);
    }
    prev = k;
  }
}

/** The file's chain, checked; undefined when there is no file. Anything else wrong is an error naming the path. */
export function readKeyFile(path: string): KeyFile | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new GpuxError('REQUEST_INVALID', `the coordinator key file ${JSON.stringify(path)} cannot be read (${(err as Error).message}): give the coordinator read access to it`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw corrupt(path, 'is not JSON', err);
  }
  const parsed = KeyFileSchema.safeParse(json);
  if (!parsed.success) throw corrupt(path, `is not a key chain (${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')})`);
  checkChain(path, parsed.data);
  return parsed.data;
}

const serialize = (file: KeyFile) => `${JSON.stringify(file, null, 2)}\n`;

function tempBeside(path: string): string {
  return `${path}.${process.pid}.${Date.now()}.tmp`;
}

function writeTemp(path: string, file: KeyFile): string {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = tempBeside(path);
  writeFileSync(tmp, serialize(file), { mode: 0o600, flag: 'wx' });
  chmodSync(tmp, 0o600); // whatever the umask
  return tmp;
}

function newKey(activeFrom: number, endorser?: StoredKey): StoredKey {
  const pair = generateNodeKeyPair();
  if (!endorser) return { publicKey: pair.publicKey, privateKeyPem: pair.privateKeyPem, activeFrom, endorsement: null };
  const by = keyFingerprint(endorser.publicKey);
  const signature = sign(null, endorsementBytes({ publicKey: pair.publicKey, activeFrom }, by), createPrivateKey(endorser.privateKeyPem)).toString('base64');
  return { publicKey: pair.publicKey, privateKeyPem: pair.privateKeyPem, activeFrom, endorsement: { by, signature } };
}

/**
 * The chain in `path`, made (one key, active from `now`) when there is no file. Creation is a hard link of a
 * finished temp file: two replicas starting at once on a fresh shared file both end up with the same key.
 */
export function loadOrCreateKeyFile(path: string, now: number): { file: KeyFile; created: boolean } {
  const existing = readKeyFile(path);
  if (existing) return { file: existing, created: false };
  const file: KeyFile = { version: 1, keys: [newKey(now)] };
  const tmp = writeTemp(path, file);
  try {
    linkSync(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new GpuxError('REQUEST_INVALID', `cannot create the coordinator key file ${JSON.stringify(path)} (${(err as Error).message}): check the directory is writable`, { cause: err });
    const other = readKeyFile(path);
    if (!other) throw corrupt(path, 'vanished while it was being created');
    return { file: other, created: false };
  } finally {
    rmSync(tmp, { force: true });
  }
  return { file, created: true };
}

/**
 * Append a new key, endorsed by the newest one, that signs from `activeFrom` on (default a day from now).
 * Written through a temp file and a rename: a running coordinator never reads half a file.
 */
export function rotateKey(path: string, opts: { activeFrom: number }): KeyFile {
  const file = readKeyFile(path);
  if (!file) throw new GpuxError('NOT_FOUND', `no coordinator key file at ${JSON.stringify(path)}: start the coordinator once to make it, or pass --key-file / --data-dir`);
  if (file.keys.length >= MAX_CHAIN_KEYS) throw new GpuxError('LIMIT_EXCEEDED', `the key chain in ${JSON.stringify(path)} already holds ${MAX_CHAIN_KEYS} keys, the most agents follow`);
  const newest = file.keys[file.keys.length - 1] as StoredKey;
  if (opts.activeFrom < newest.activeFrom) {
    throw new GpuxError('REQUEST_INVALID', `the new key would be active before the newest key (${new Date(newest.activeFrom).toISOString()}): activate it later`);
  }
  const next: KeyFile = { version: 1, keys: [...file.keys, newKey(opts.activeFrom, newest)] };
  const tmp = writeTemp(path, next);
  try {
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw new GpuxError('REQUEST_INVALID', `cannot replace the coordinator key file ${JSON.stringify(path)} (${(err as Error).message})`, { cause: err });
  }
  return next;
}

/** What `gpux coordinator key show` prints: the public chain and the key signing at `now`. */
export function keyChainView(file: KeyFile, now: number): { signingKey: string; keys: CoordinatorKey[] } {
  const keys = file.keys.map(publicKeyOf);
  const signing = [...keys].reverse().find((k) => k.activeFrom <= now) ?? keys[0];
  return { signingKey: signing?.fingerprint ?? '', keys };
}
