/**
 * One summary exchange with a peer region (issue 15): POST its /v1/federation/summary with this region's summary,
 * signed by this coordinator's key; check the answer was signed, for this request's nonce, by the key pinned for
 * the peer; read the peer's summary from it. Measures the round trip. Every failure is a PeerContactError saying
 * whether the peer could not be reached (or answered nonsense) or refused us / answered with another key.
 */
import type { Clock, Random } from '@gpux/core';
import {
  ErrorBody,
  FEDERATION_HEADERS,
  keyFingerprint,
  MAX_SUMMARY_BODY_BYTES,
  peerCanonicalAnswer,
  peerCanonicalRequest,
  publicKeyFromRaw,
  ROUTES,
  type RegionSummary,
  SummaryExchange,
  verifyEd25519,
} from '@gpux/protocol';
import type { Signer } from '../identity/signer.js';

export class PeerContactError extends Error {
  constructor(
    readonly status: 'unreachable' | 'unauthorized',
    message: string,
  ) {
    super(message);
    this.name = 'PeerContactError';
  }
}

export interface ExchangeDeps {
  clock: Clock;
  random: Random;
  signer: Signer;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
}

/** The body, at most `max` bytes (a hostile peer may stream without end). */
async function readBounded(res: Response, max: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > max) throw new PeerContactError('unreachable', `answered ${declared} bytes, more than the ${max} a summary may take`);
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new PeerContactError('unreachable', `answered more than the ${max} bytes a summary may take`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function errorMessage(text: string): string {
  try {
    const parsed = ErrorBody.safeParse(JSON.parse(text));
    if (parsed.success) return `${parsed.data.error.code}: ${parsed.data.error.message}`;
  } catch {
    // not JSON: fall through
  }
  return text.slice(0, 200);
}

export async function exchangeSummary(
  deps: ExchangeDeps,
  peer: { url: string; keyFingerprint: string },
  summary: RegionSummary,
  timeoutMs: number,
): Promise<{ summary: RegionSummary; rttMs: number }> {
  const path = ROUTES.exchangeSummary.path;
  const body = JSON.stringify({ summary });
  const timestamp = deps.clock.now();
  const nonce = Buffer.from(deps.random.bytes(16)).toString('hex');
  const signed = deps.signer.signBytes((keyId) => peerCanonicalRequest({ method: 'POST', path, body, timestamp, nonce, keyId }));
  const started = deps.clock.now();
  let res: Response;
  let text: string;
  try {
    res = await (deps.fetch ?? fetch)(`${peer.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        [FEDERATION_HEADERS.key]: signed.key.publicKey,
        [FEDERATION_HEADERS.timestamp]: String(timestamp),
        [FEDERATION_HEADERS.nonce]: nonce,
        [FEDERATION_HEADERS.signature]: signed.signature,
      },
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await readBounded(res, MAX_SUMMARY_BODY_BYTES);
  } catch (err) {
    if (err instanceof PeerContactError) throw err;
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const cause = e.cause?.code && e.cause.message ? `${e.cause.code} (${e.cause.message})` : (e.cause?.code ?? e.cause?.message ?? e.message);
    const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : cause;
    throw new PeerContactError('unreachable', `cannot reach ${peer.url}: ${why}`);
  }
  const rttMs = Math.max(0, deps.clock.now() - started);
  if (res.status === 401 || res.status === 403) throw new PeerContactError('unauthorized', `${peer.url} refused this region (HTTP ${res.status} ${errorMessage(text)})`);
  if (res.status !== 200) throw new PeerContactError('unreachable', `${peer.url} answered HTTP ${res.status} ${errorMessage(text)}`);
  const answerKey = res.headers.get(FEDERATION_HEADERS.key) ?? '';
  const answerSignature = res.headers.get(FEDERATION_HEADERS.signature) ?? '';
  let answerKeyId: string;
  let key: ReturnType<typeof publicKeyFromRaw>;
  try {
    answerKeyId = keyFingerprint(answerKey);
    key = publicKeyFromRaw(answerKey);
  } catch {
    throw new PeerContactError('unauthorized', `${peer.url} answered without a valid ${FEDERATION_HEADERS.key} header: it is not a gpux region, or not this version`);
  }
  if (answerKeyId !== peer.keyFingerprint) {
    throw new PeerContactError('unauthorized', `${peer.url} answered with key ${answerKeyId}, not the pinned ${peer.keyFingerprint}: check the URL and the key (gpux coordinator key show on the peer)`);
  }
  if (!verifyEd25519(peerCanonicalAnswer(nonce, text, answerKeyId), answerSignature, key)) {
    throw new PeerContactError('unauthorized', `${peer.url} answered with a bad signature for this request`);
  }
  let parsed: ReturnType<typeof SummaryExchange.safeParse>;
  try {
    parsed = SummaryExchange.safeParse(JSON.parse(text));
  } catch {
    throw new PeerContactError('unreachable', `${peer.url} answered a body that is not JSON`);
  }
  if (!parsed.success) throw new PeerContactError('unreachable', `${peer.url} answered an invalid summary: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ').slice(0, 300)}`);
  return { summary: parsed.data.summary, rttMs };
}
