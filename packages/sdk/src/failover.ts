/**
 * Several coordinator URLs (replicas, or a load balancer and its backends): which one a request goes to, when it
 * may move on to the next, and how a failure over all of them reads. Sticky: a client stays on the URL that last
 * answered. Moving on resends the request, so only what cannot be done twice moves on after it may have been sent.
 */
import { IDEMPOTENCY_HEADER } from '@gpux/protocol';
import { GpuxClientError } from './errors.js';

/** Proxy answers that mean "this backend is down or overloaded", not "your request is wrong". */
export const FAILOVER_STATUSES: readonly number[] = [502, 503, 504];

/** The URL list part of TransportConfig: `baseUrl` is always `urls[current]`. */
export interface UrlRing {
  baseUrl: string;
  urls: readonly string[];
  current: number;
}

/** Normalize and check one coordinator URL, so a typo fails clearly instead of as a "connection" error. */
export function normalizeBaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GpuxClientError(`invalid coordinator URL "${url}": expected something like http://127.0.0.1:8080`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new GpuxClientError(`invalid coordinator URL "${url}": only http and https are supported`);
  }
  return parsed.href.replace(/\/+$/, '');
}

/**
 * One URL, a comma-separated list ("https://a:8080,https://b:8080") or an array of them: normalized, in order,
 * duplicates dropped. Empty entries and bad URLs throw, naming the entry and its position.
 */
export function parseCoordinatorUrls(input: string | readonly string[]): string[] {
  const parts = typeof input === 'string' ? input.split(',') : input.flatMap((u) => u.split(','));
  if (parts.length === 0) throw new GpuxClientError('no coordinator URL given: expected something like http://127.0.0.1:8080');
  const out: string[] = [];
  for (const [i, raw] of parts.entries()) {
    const part = raw.trim();
    if (part === '') {
      throw new GpuxClientError(
        parts.length === 1 ? 'no coordinator URL given: expected something like http://127.0.0.1:8080' : `coordinator URL ${i + 1} of ${parts.length} is empty: separate URLs with single commas, e.g. https://a:8080,https://b:8080`,
      );
    }
    let url: string;
    try {
      url = normalizeBaseUrl(part);
    } catch (err) {
      throw parts.length === 1 ? err : new GpuxClientError(`coordinator URL ${i + 1} of ${parts.length}: ${(err as Error).message}`);
    }
    if (!out.includes(url)) out.push(url);
  }
  return out;
}

/** A request that may be sent twice without doing its work twice: reads, and writes carrying an idempotency key. */
export function replayable(method: string, headers: Record<string, string> | undefined): boolean {
  if (method === 'GET' || method === 'HEAD') return true;
  return Object.keys(headers ?? {}).some((h) => h.toLowerCase() === IDEMPOTENCY_HEADER.toLowerCase());
}

/** True when the connection was refused: nothing was sent, so any request may go to the next URL. */
export function connectionRefused(err: unknown): boolean {
  let e = err as { cause?: unknown; code?: unknown; errors?: unknown } | undefined;
  for (let depth = 0; e && depth < 5; depth++, e = e.cause as typeof e) {
    if (e.code === 'ECONNREFUSED') return true;
    // Happy eyeballs: every address refused (undici nests them in an AggregateError).
    if (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every((x) => (x as { code?: unknown })?.code === 'ECONNREFUSED')) return true;
  }
  return false;
}

/** Make `url` the one later requests start from. */
export function stickTo(ring: UrlRing, index: number): void {
  ring.current = index % ring.urls.length;
  ring.baseUrl = ring.urls[ring.current] as string;
}

/** After a failure on the current URL, start later requests at the next one (one URL: nothing changes). */
export function moveOn(ring: UrlRing, failedUrl: string): void {
  if (ring.urls.length > 1 && ring.baseUrl === failedUrl) stickTo(ring, ring.current + 1);
}

/** "http://a (ECONNREFUSED), http://b (HTTP 503)": what went wrong where, for an error over several URLs. */
export function describeTries(tries: readonly { url: string; what: string }[]): string {
  return tries.map((t) => `${t.url} (${t.what})`).join(', ');
}
