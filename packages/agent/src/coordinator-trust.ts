/**
 * Which coordinator this node obeys (issue 19, TRUST.md layer 2). The node pins the coordinator's ed25519 key in
 * <dataDir>/coordinator-keys.json and checks the seal of every order before acting on it. The first pin comes,
 * in order, from --coordinator-key, from the fingerprint inside the enrollment token, or else from the first
 * registration answer (trust on first use, with a warning). A key rotation is followed through the endorsement
 * chain (GET /v1/coordinator/identity), walked only from keys already trusted, and the new key is persisted.
 */
import { type Clock, GpuxError, type Logger } from '@gpux/core';
import {
  type CoordinatorIdentityResponse,
  type CoordinatorKey,
  checkSeal,
  enrollmentTokenFingerprint,
  keyFingerprint,
  type Order,
  type RegisterResponse,
  type Seal,
  type SealCheck,
  trustedKeys,
} from '@gpux/protocol';
import { keysFilePath, type PinnedKey, type PinSource, readPinnedKeys, writePinnedKeys } from './coordinator-keys-file.js';

/** What the agent loop needs: check the registration answer, check an order's seal. */
export interface OrderTrust {
  /** Throws CoordinatorNotTrustedError unless the answer carries a key this node trusts (pinning it on first use) and its seal verifies. */
  acceptRegistration(res: RegisterResponse, node: { nodeId: string; publicKey: string }): Promise<void>;
  check(order: Order, seal: Seal | undefined): Promise<SealCheck>;
}

/** The coordinator answering is not the one this node is enrolled with: never retried (registration fails, `gpux node start` exits). */
export class CoordinatorNotTrustedError extends GpuxError {
  constructor(message: string) {
    super('SIGNATURE_INVALID', message);
    this.name = 'CoordinatorNotTrustedError';
  }
}

export interface CoordinatorTrustOptions {
  dataDir: string;
  coordinatorUrl: string;
  /** --coordinator-key / GPUX_COORDINATOR_KEY: the fingerprint to pin (64 lowercase hex). */
  coordinatorKey?: string | undefined;
  /** May carry the fingerprint after a dot (gpux_enroll_<secret>.<fingerprint>). */
  enrollmentToken?: string | undefined;
  clock: Clock;
  logger: Logger;
  /** GET /v1/coordinator/identity (the client's identity()). */
  fetchIdentity(): Promise<CoordinatorIdentityResponse>;
}

/** At most one identity fetch per this long, however many orders name an unknown key. */
export const IDENTITY_FETCH_INTERVAL_MS = 30_000;

/** A fingerprint the node was told to trust, whose public key it learns from the coordinator (then it is pinned). */
interface Expected {
  fingerprint: string;
  source: 'coordinator-key' | 'enrollment-token';
}

const short = (fp: string) => `${fp.slice(0, 16)}…`;

export class CoordinatorTrust implements OrderTrust {
  private chain: readonly CoordinatorKey[] = [];
  private trustedNow: Map<string, string>;
  private lastFetchAt: number | null = null;
  private fetching: Promise<void> | null = null;
  private lastFetchError: string | null = null;

  private constructor(
    private readonly o: CoordinatorTrustOptions,
    private readonly pins: Map<string, PinnedKey>,
    private expected: Expected | null,
  ) {
    this.trustedNow = this.walk();
  }

  /** Reads the pinned keys; refuses to start when they disagree with --coordinator-key. */
  static async open(o: CoordinatorTrustOptions): Promise<CoordinatorTrust> {
    const pins = await readPinnedKeys(o.dataDir);
    const fromToken = o.enrollmentToken ? enrollmentTokenFingerprint(o.enrollmentToken) : undefined;
    const file = keysFilePath(o.dataDir);
    if (pins.size > 0) {
      if (o.coordinatorKey && !pins.has(o.coordinatorKey)) {
        throw new GpuxError(
          'REQUEST_INVALID',
          `--coordinator-key ${short(o.coordinatorKey)} is not the coordinator key this node already trusts: ${describePins(pins)} (in ${file}). ` +
            `If this node should now obey the coordinator with key ${short(o.coordinatorKey)}, move ${file} away and start again; otherwise drop --coordinator-key (GPUX_COORDINATOR_KEY).`,
        );
      }
      if (!o.coordinatorKey && fromToken && !pins.has(fromToken)) {
        o.logger.warn({ tokenKey: fromToken, file }, `the enrollment token names coordinator key ${short(fromToken)}, which this node has not pinned; it keeps trusting ${describePins(pins)} and follows a rotation only when a trusted key endorsed it`);
      }
      return new CoordinatorTrust(o, pins, null);
    }
    const expected: Expected | null = o.coordinatorKey
      ? { fingerprint: o.coordinatorKey, source: 'coordinator-key' }
      : fromToken
        ? { fingerprint: fromToken, source: 'enrollment-token' }
        : null;
    return new CoordinatorTrust(o, pins, expected);
  }

  /** Fingerprint → public key of every key this node trusts now (the pinned ones and those they endorsed). */
  trusted(): ReadonlyMap<string, string> {
    return this.trustedNow;
  }

  /** The pinned keys as stored (for tests and diagnostics). */
  pinned(): ReadonlyMap<string, PinnedKey> {
    return this.pins;
  }

  async acceptRegistration(res: RegisterResponse, node: { nodeId: string; publicKey: string }): Promise<void> {
    const c = res.coordinator;
    if (!c) {
      throw this.refusal(
        `the coordinator at ${this.o.coordinatorUrl} did not prove its identity: its registration answer carries no signing key (an older coordinator, or something in between that is not the coordinator), so this node takes no orders from it`,
      );
    }
    if (keyFingerprint(c.publicKey) !== c.fingerprint) throw this.refusal(`the coordinator at ${this.o.coordinatorUrl} sent a key that does not have the fingerprint it claims`);
    const order: Order = { kind: 'registration', nodeId: node.nodeId, nodePublicKey: node.publicKey, serverTime: res.serverTime };
    if (this.pins.size === 0 && c.fingerprint === (this.expected?.fingerprint ?? c.fingerprint)) {
      // The first pin: the key named by --coordinator-key or the token, or (nothing named) the key presented.
      const r = checkSeal(order, c.seal, new Map([[c.fingerprint, c.publicKey]]), this.o.clock.now());
      if (!r.ok) throw this.refusal(`the coordinator at ${this.o.coordinatorUrl} could not prove it holds key ${short(c.fingerprint)}: ${r.reason}`);
      const source: PinSource = this.expected?.source ?? 'first-use';
      await this.pin(c.fingerprint, c.publicKey, source);
      if (source === 'first-use') this.warnFirstUse(c.fingerprint);
      else this.o.logger.info({ key: c.fingerprint, source }, `pinned the coordinator key ${short(c.fingerprint)} (from ${sourceWords(source)})`);
      return;
    }
    const r = await this.check(order, c.seal);
    if (r.ok) return;
    if (this.trustedNow.has(c.seal.keyId)) throw this.refusal(`the coordinator at ${this.o.coordinatorUrl} could not prove it is the one this node is enrolled with: ${r.reason}`);
    throw this.refusal(
      `the coordinator at ${this.o.coordinatorUrl} is not the one this node is enrolled with: it signs with key ${short(c.seal.keyId)} but this node trusts ${this.describeTrust()}` +
        (this.lastFetchError ? ` (its key chain could not be read: ${this.lastFetchError})` : ''),
    );
  }

  /** Checks an order's seal; when it names a key not trusted yet, reads the coordinator's key chain (at most every 30 s) and checks again. */
  async check(order: Order, seal: Seal | undefined): Promise<SealCheck> {
    const first = checkSeal(order, seal, this.trustedNow, this.o.clock.now());
    if (first.ok || !seal || this.trustedNow.has(seal.keyId)) return first;
    if (!(await this.refresh())) return first;
    return checkSeal(order, seal, this.trustedNow, this.o.clock.now());
  }

  /** False when a fetch is not allowed yet (rate limit). */
  private async refresh(): Promise<boolean> {
    if (this.fetching) {
      await this.fetching;
      return true;
    }
    const now = this.o.clock.now();
    if (this.lastFetchAt !== null && now - this.lastFetchAt < IDENTITY_FETCH_INTERVAL_MS) return false;
    this.lastFetchAt = now;
    this.fetching = this.followChain().finally(() => {
      this.fetching = null;
    });
    await this.fetching;
    return true;
  }

  private async followChain(): Promise<void> {
    let res: CoordinatorIdentityResponse;
    try {
      res = await this.o.fetchIdentity();
      this.lastFetchError = null;
    } catch (e) {
      this.lastFetchError = (e as Error).message;
      this.o.logger.warn({ err: this.lastFetchError }, "could not read the coordinator's key chain (GET /v1/coordinator/identity)");
      return;
    }
    this.chain = res.keys;
    // A fingerprint this node was told to trust: the chain gives its public key (checked against the fingerprint).
    const named = this.expected && res.keys.find((k) => k.fingerprint === this.expected?.fingerprint && keyFingerprint(k.publicKey) === k.fingerprint);
    if (named && this.expected) await this.pin(named.fingerprint, named.publicKey, this.expected.source, false);
    const walked = this.walk();
    const added: string[] = [];
    for (const [fp, publicKey] of walked) {
      if (this.pins.has(fp)) continue;
      const by = res.keys.find((k) => k.fingerprint === fp)?.endorsement?.by;
      this.pins.set(fp, { publicKey, pinnedAt: this.nowIso(), source: 'endorsement', ...(by ? { endorsedBy: by } : {}) });
      added.push(fp);
    }
    if (added.length > 0 || named) await writePinnedKeys(this.o.dataDir, this.pins);
    this.trustedNow = this.walk();
    for (const fp of added) {
      const by = this.pins.get(fp)?.endorsedBy;
      this.o.logger.info({ key: fp, endorsedBy: by }, `following the coordinator's key rotation: now trusting key ${short(fp)}${by ? ` (endorsed by ${short(by)})` : ''}`);
    }
  }

  private async pin(fingerprint: string, publicKey: string, source: PinSource, persist = true): Promise<void> {
    this.pins.set(fingerprint, { publicKey, pinnedAt: this.nowIso(), source });
    if (this.expected?.fingerprint === fingerprint) this.expected = null;
    if (persist) await writePinnedKeys(this.o.dataDir, this.pins);
    this.trustedNow = this.walk();
  }

  private walk(): Map<string, string> {
    return trustedKeys(new Map([...this.pins].map(([fp, k]) => [fp, k.publicKey])), this.chain);
  }

  private warnFirstUse(fingerprint: string): void {
    this.o.logger.warn(
      { key: fingerprint, file: keysFilePath(this.o.dataDir) },
      `trust on first use: pinned the key ${short(fingerprint)} of the coordinator at ${this.o.coordinatorUrl}, because neither --coordinator-key nor the enrollment token named one. ` +
        'Had someone been in the middle of this first connection, their key would now be pinned. To pin explicitly, ask the coordinator’s operator for its key fingerprint ' +
        '(GET /v1/coordinator/identity shows it) and start with --coordinator-key FINGERPRINT (GPUX_COORDINATOR_KEY), or use an enrollment token that carries it.',
    );
  }

  private describeTrust(): string {
    if (this.pins.size > 0) return describePins(this.pins);
    if (this.expected) return `${short(this.expected.fingerprint)} (named by ${sourceWords(this.expected.source)})`;
    return 'no key yet';
  }

  private refusal(what: string): CoordinatorNotTrustedError {
    const file = keysFilePath(this.o.dataDir);
    const fix =
      this.pins.size > 0
        ? `If the coordinator's key really changed, get its new fingerprint from its operator, move ${file} away and start again with --coordinator-key NEW_FINGERPRINT (or a new enrollment token); otherwise check --coordinator / GPUX_COORDINATOR_URL.`
        : 'Check --coordinator / GPUX_COORDINATOR_URL points at the coordinator that issued the enrollment token; if its key really changed, start with --coordinator-key NEW_FINGERPRINT from its operator, or a new enrollment token.';
    return new CoordinatorNotTrustedError(`${what}. ${fix}`);
  }

  private nowIso(): string {
    return new Date(this.o.clock.now()).toISOString();
  }
}

function sourceWords(source: PinSource, by?: string): string {
  if (source === 'coordinator-key') return '--coordinator-key';
  if (source === 'enrollment-token') return 'the enrollment token';
  if (source === 'first-use') return 'its first registration answer, trust on first use';
  return `an endorsement by ${by ? short(by) : 'a trusted key'}`;
}

function describePins(pins: ReadonlyMap<string, PinnedKey>): string {
  return [...pins]
    .slice(-3)
    .map(([fp, k]) => `${short(fp)} (pinned from ${sourceWords(k.source, k.endorsedBy)} on ${k.pinnedAt.slice(0, 10)})`)
    .join(', ');
}
