/**
 * The coordinator's seal on every order an agent acts on (issue 19; TRUST.md layer 2). Signs with the newest
 * key of the chain whose activeFrom has passed, so a rotated key takes over by itself at its activation; a
 * rotation written while the coordinator runs is picked up by watching the file (like tls.ts).
 */
import { createPrivateKey, type KeyObject, sign } from 'node:crypto';
import { type Stats, unwatchFile, watchFile } from 'node:fs';
import type { Clock } from '@gpux/core';
import {
  type ChallengeAssignment,
  type CoordinatorIdentityResponse,
  type CoordinatorKey,
  canonicalDigest,
  generateNodeKeyPair,
  type Order,
  SEAL_TTL_MS,
  type Seal,
  type SealedCancel,
  sealOrder,
} from '@gpux/protocol';
import { type KeyFile, publicKeyOf, readKeyFile } from './key-file.js';

interface LoadedKey {
  pub: CoordinatorKey;
  privateKey: KeyObject;
}

/** How often the key file is polled for a rotation by default (a rotation activates a day later anyway). */
export const KEY_WATCH_INTERVAL_MS = 5000;

export class Signer {
  private keys: LoadedKey[] = [];

  constructor(
    file: KeyFile,
    private readonly clock: Clock,
  ) {
    this.use(file);
  }

  /** A key of its own, held in memory only: for an embedded coordinator or a test without a key file. */
  static ephemeral(clock: Clock): Signer {
    const pair = generateNodeKeyPair();
    return new Signer({ version: 1, keys: [{ ...pair, activeFrom: 0, endorsement: null }] }, clock);
  }

  private use(file: KeyFile): void {
    this.keys = file.keys.map((k) => ({ pub: publicKeyOf(k), privateKey: createPrivateKey(k.privateKeyPem) }));
  }

  /** The newest key active at `now` (the first key if none is yet: a clock set back must not stop signing). */
  private active(now: number): LoadedKey {
    for (let i = this.keys.length - 1; i >= 0; i--) {
      const k = this.keys[i] as LoadedKey;
      if (k.pub.activeFrom <= now) return k;
    }
    return this.keys[0] as LoadedKey;
  }

  /** The key signing now: its fingerprint goes into enrollment tokens, its public key into registration answers. */
  current(): CoordinatorKey {
    return this.active(this.clock.now()).pub;
  }

  /** The public key (base64) of a key of the chain, by fingerprint. */
  publicKeyOf(fingerprint: string): string {
    const k = this.keys.find((x) => x.pub.fingerprint === fingerprint);
    if (!k) throw new Error(`invariant: no key ${fingerprint} in the coordinator's chain`);
    return k.pub.publicKey;
  }

  seal(order: Order, expiresAt: number): Seal {
    const k = this.active(this.clock.now());
    return sealOrder(order, { privateKey: k.privateKey, keyId: k.pub.fingerprint }, expiresAt);
  }

  sealCancel(attemptId: string, nodeId: string): SealedCancel {
    return { attemptId, seal: this.seal({ kind: 'cancel', attemptId, nodeId }, this.clock.now() + SEAL_TTL_MS.cancel) };
  }

  /** A challenge is sealed until its deadline, over its canonical digest without the seal. */
  sealChallenge(nodeId: string, a: ChallengeAssignment): ChallengeAssignment {
    const { seal: _old, ...bare } = a;
    return { ...bare, seal: this.seal({ kind: 'challenge', challengeId: a.id, nodeId, challengeDigest: canonicalDigest(bare) }, a.deadlineAt) };
  }

  /** Sign `data` with the key signing now (federation: requests to peer regions and answers to them, issue 15). */
  signBytes(data: (keyId: string) => Buffer): { key: CoordinatorKey; signature: string } {
    const k = this.active(this.clock.now());
    return { key: k.pub, signature: sign(null, data(k.pub.fingerprint), k.privateKey).toString('base64') };
  }

  /** GET /v1/coordinator/identity. */
  identityView(): CoordinatorIdentityResponse {
    return { signingKey: this.current().fingerprint, keys: this.keys.map((k) => k.pub) };
  }

  /**
   * Re-read the key file when it changes. Only a chain that extends the one in use is taken (a new key
   * appended); anything else is reported and the keys in use are kept. Unref'd. Returns stop.
   */
  watch(path: string, onError: (err: unknown) => void, onRotated: (newest: CoordinatorKey) => void, intervalMs = KEY_WATCH_INTERVAL_MS): () => void {
    const onChange = (curr: Stats, prev: Stats) => {
      if (curr.mtimeMs === prev.mtimeMs && curr.ino === prev.ino && curr.size === prev.size) return;
      try {
        const file = readKeyFile(path);
        if (!file) throw new Error(`the coordinator key file ${path} was removed: keeping the keys in memory; restore it from your backup`);
        const same = this.keys.every((k, i) => file.keys[i]?.publicKey === k.pub.publicKey);
        if (!same) throw new Error(`the coordinator key file ${path} no longer starts with the chain in use: ignored (a key chain only grows; restore the file)`);
        if (file.keys.length === this.keys.length) return;
        this.use(file);
        onRotated(this.keys[this.keys.length - 1]?.pub as CoordinatorKey);
      } catch (err) {
        onError(err);
      }
    };
    const w = watchFile(path, { interval: intervalMs, persistent: false }, onChange);
    w.unref();
    return () => unwatchFile(path, onChange);
  }
}
