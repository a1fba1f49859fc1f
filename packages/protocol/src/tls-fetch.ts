/**
 * A fetch for private CAs and pinned certificates (issue 19), for Node clients (SDK, CLI, agent); the browser
 * dashboard uses the browser's trust store. `ca`: PEM bundle trusted instead of the system's roots (GPUX_CA_FILE).
 * `pins`: sha256 fingerprints (hex, colons optional) of which at least one certificate of the presented chain
 * must be — the leaf, or an issuing CA to survive renewals. Pinning is on top of normal verification, never
 * instead of it. Built on undici (the HTTP client inside Node's own fetch), which lets TLS options be given per
 * client; Node's global fetch does not.
 */
import { readFileSync } from 'node:fs';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';

export interface TlsFetchOptions {
  /** PEM text of the CA bundle to trust (replaces the system roots). */
  ca?: string | Buffer;
  /** Certificate sha256 fingerprints; one must appear in the server's chain. */
  pins?: readonly string[];
}

/** Normalise "AB:CD:…" or "abcd…" to 64 lowercase hex characters, or throw with what was wrong. */
export function normalizePin(pin: string): string {
  const hex = pin.replace(/:/g, '').trim().toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`certificate pin ${JSON.stringify(pin)} is not a sha256 fingerprint (64 hex characters, colons allowed)`);
  return hex;
}

/** Fingerprints of the presented chain, leaf first. */
function chainFingerprints(cert: PeerCertificate): string[] {
  const out: string[] = [];
  let c: (PeerCertificate & { issuerCertificate?: PeerCertificate }) | undefined = cert;
  while (c?.fingerprint256 && !out.includes(normalizePin(c.fingerprint256))) {
    out.push(normalizePin(c.fingerprint256));
    c = c.issuerCertificate;
  }
  return out;
}

/** A fetch that trusts `ca` and checks `pins`; the global fetch when neither is given. */
export function tlsFetch(opts: TlsFetchOptions = {}): typeof fetch {
  if (opts.ca === undefined && (opts.pins === undefined || opts.pins.length === 0)) return fetch;
  const pins = (opts.pins ?? []).map(normalizePin);
  const dispatcher = new Agent({
    connect: {
      ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
      checkServerIdentity: (host: string, cert: PeerCertificate) => {
        const err = checkServerIdentity(host, cert);
        if (err || pins.length === 0) return err;
        const chain = chainFingerprints(cert);
        if (chain.some((f) => pins.includes(f))) return undefined;
        return new Error(`the certificate of ${host} matches none of the pinned fingerprints (its chain: ${chain.map((f) => f.slice(0, 16)).join(', ')}…)`);
      },
    },
  });
  const f = (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher });
  return f as unknown as typeof fetch;
}

/** tlsFetch from a CA file path (GPUX_CA_FILE) and pins; a clear error naming the variable when the file cannot be read. */
export function tlsFetchFromFiles(opts: { caFile?: string; pins?: readonly string[]; source?: string }): typeof fetch {
  let ca: Buffer | undefined;
  if (opts.caFile !== undefined) {
    try {
      ca = readFileSync(opts.caFile);
    } catch (e) {
      throw new Error(`${opts.source ?? 'GPUX_CA_FILE'}=${JSON.stringify(opts.caFile)} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): give the path of a PEM CA bundle`);
    }
    if (!ca.toString('utf8').includes('-----BEGIN CERTIFICATE-----')) throw new Error(`${opts.source ?? 'GPUX_CA_FILE'}=${JSON.stringify(opts.caFile)} holds no PEM certificate ("-----BEGIN CERTIFICATE-----")`);
  }
  return tlsFetch({ ...(ca ? { ca } : {}), ...(opts.pins ? { pins: opts.pins } : {}) });
}

/**
 * Request fields for a streamed upload body: an async iterable (undici takes one, and it keeps backpressure, where
 * Readable.toWeb reads ahead without bound on Node 20), half duplex, and no redirects — following one would make
 * undici tee the body to replay it, holding a whole chunk in memory until the request ends.
 */
export function streamedBody(body: AsyncIterable<Uint8Array>): { body: ReadableStream<Uint8Array>; duplex: 'half'; redirect: 'error' } {
  return { body: body as unknown as ReadableStream<Uint8Array>, duplex: 'half', redirect: 'error' };
}
