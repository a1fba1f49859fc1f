/**
 * The node's ed25519 identity: created on first start, stored in <dataDir>/node-key.json (mode 0600), reused afterwards.
 * Beside it, its X25519 encryption key (issue 13, end-to-end encrypted jobs): <dataDir>/node-enc-key.json (0600), added
 * to an existing identity on its next start.
 */
import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GpuxError } from '@gpux/core';
import { generateNodeKeyPair, nodeIdFromPublicKey, publicKeyFromRaw, rawPublicKey } from '@gpux/protocol';
import { loadOrCreateEncryptionKey } from './e2e/node-encryption-key.js';
import type { X25519KeyPair } from '@gpux/protocol/e2e';

export interface NodeIdentity {
  nodeId: string;
  publicKey: string; // base64 of the 32 raw bytes
  privateKeyPem: string;
  /** The X25519 key buyers wrap data keys to (announced at registration, signed by the identity key). None: no encrypted jobs. */
  encryption?: X25519KeyPair;
}

export const KEY_FILE = 'node-key.json';

export async function loadOrCreateIdentity(dataDir: string): Promise<NodeIdentity> {
  const file = join(dataDir, KEY_FILE);
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (text !== undefined) {
    const identity = parseKeyFile(file, text);
    return { ...identity, encryption: await loadOrCreateEncryptionKey(dataDir) };
  }

  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, 0o700);
  const pair = generateNodeKeyPair();
  const identity = { nodeId: nodeIdFromPublicKey(pair.publicKey), ...pair };
  // Write to a temp file and rename, so a crash never leaves a half-written key behind.
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, `${JSON.stringify({ version: 1, ...identity }, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  await rename(tmp, file);
  return { ...identity, encryption: await loadOrCreateEncryptionKey(dataDir) };
}

function parseKeyFile(file: string, text: string): NodeIdentity {
  const fail = (why: string) =>
    new GpuxError('INTERNAL', `the node key file ${file} is corrupt (${why}); move it away to create a new identity (the node then gets a new id)`);
  let data: { publicKey?: unknown; privateKeyPem?: unknown };
  try {
    data = JSON.parse(text);
  } catch {
    throw fail('not JSON');
  }
  if (typeof data.publicKey !== 'string' || typeof data.privateKeyPem !== 'string') throw fail('publicKey or privateKeyPem missing');
  let derived: string;
  try {
    publicKeyFromRaw(data.publicKey);
    derived = rawPublicKey(createPublicKey(createPrivateKey(data.privateKeyPem)));
  } catch (e) {
    throw fail((e as Error).message);
  }
  if (derived !== data.publicKey) throw fail('publicKey does not belong to privateKeyPem');
  return { nodeId: nodeIdFromPublicKey(data.publicKey), publicKey: data.publicKey, privateKeyPem: data.privateKeyPem };
}
