/**
 * The node's X25519 encryption key (issue 13): buyers' clients wrap each encrypted job's data key to it. Kept in
 * <dataDir>/node-enc-key.json (0600) beside the identity key, created on first start (also for a node whose identity
 * predates it: written to a temp file and renamed, so a crash never leaves half a key). Announced at registration,
 * signed by the identity key (coordinator-client.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GpuxError } from '@gpux/core';
import { generateX25519KeyPair, type X25519KeyPair, x25519PublicOf } from '@gpux/protocol/e2e';

export const ENC_KEY_FILE = 'node-enc-key.json';

export async function loadOrCreateEncryptionKey(dataDir: string): Promise<X25519KeyPair> {
  const file = join(dataDir, ENC_KEY_FILE);
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (text !== undefined) return parse(file, text);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const pair = generateX25519KeyPair();
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, `${JSON.stringify({ version: 1, ...pair }, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  return pair;
}

function parse(file: string, text: string): X25519KeyPair {
  const fail = (why: string) =>
    new GpuxError('INTERNAL', `the node encryption key file ${file} is corrupt (${why}); move it away to create a new one (encrypted jobs waiting for a key wrapped to the old one then fail)`);
  let data: { publicKey?: unknown; privateKey?: unknown };
  try {
    data = JSON.parse(text);
  } catch {
    throw fail('not JSON');
  }
  if (typeof data.publicKey !== 'string' || typeof data.privateKey !== 'string') throw fail('publicKey or privateKey missing');
  let derived: string;
  try {
    derived = x25519PublicOf(data.privateKey);
  } catch (e) {
    throw fail((e as Error).message);
  }
  if (derived !== data.publicKey) throw fail('publicKey does not belong to privateKey');
  return { publicKey: data.publicKey, privateKey: data.privateKey };
}
