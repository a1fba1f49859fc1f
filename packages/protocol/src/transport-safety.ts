/**
 * No secrets in clear (issue 19): a client refuses to send a token over plain HTTP to anything but a loopback
 * address, unless the user explicitly accepts the risk. Pure: callers decide how to fail or warn.
 */

/** What a request would expose, in words for the message ("a bearer token", "an enrollment token"…). */
export type TransportSecret = 'a bearer token' | 'an enrollment token' | 'an operator token' | 'a credential';

/** The flag and variable that accept plain HTTP, named in every message so the fix is one copy away. */
export const INSECURE_HINT = 'pass --insecure / GPUX_INSECURE=1';

/**
 * True for hosts whose traffic never leaves this machine: 127.0.0.0/8, ::1 (also IPv4-mapped ::ffff:127.x),
 * and "localhost". `hostname` as URL.hostname gives it (IPv6 in brackets, IPv4 already normalized by the parser).
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost') return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return true;
  if (host === '[::1]') return true;
  // ::ffff:127.0.0.1 is serialized by the URL parser as [::ffff:7fxx:xxxx].
  return /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host);
}

/**
 * Null when `secret` may be sent to `url`: https, or plain http to a loopback host. Otherwise a sentence saying
 * what would be exposed and to whom. An unparsable URL is a risk too (it cannot be shown to be safe).
 */
export function plainHttpRisk(url: string | URL, secret: TransportSecret = 'a bearer token'): string | null {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return `cannot tell whether "${String(url)}" is safe to send ${secret} to: it is not a valid URL`;
  }
  if (parsed.protocol === 'https:') return null;
  if (parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname)) return null;
  if (parsed.protocol !== 'http:') return `"${parsed.protocol}" URLs (${parsed.origin}) are not https: ${secret} would not be protected`;
  return `${parsed.origin} is plain HTTP to a host that is not loopback: ${secret} would cross the network in clear, and anyone on the path could read and reuse it`;
}

export interface SafeTransportOptions {
  secret: TransportSecret;
  /** The user passed --insecure / GPUX_INSECURE=1: allow, and return the warning to show. */
  insecure?: boolean;
  /** Where the URL came from, for the message ("--coordinator / GPUX_URL / the profile"). */
  source?: string;
}

/** Thrown by assertSafeTransport; `code` matches the API error code for a bad request, so CLIs treat it as bad usage. */
export class InsecureTransportError extends Error {
  readonly code = 'REQUEST_INVALID' as const;
  readonly url: string;

  constructor(url: string, message: string) {
    super(message);
    this.name = 'InsecureTransportError';
    this.url = url;
  }
}

/**
 * Throws InsecureTransportError when `secret` would be sent in clear and the user did not accept it.
 * Returns the warning to show (once) when they did, else null.
 */
export function assertSafeTransport(url: string | URL, opts: SafeTransportOptions): string | null {
  const risk = plainHttpRisk(url, opts.secret);
  if (risk === null) return null;
  if (opts.insecure) return `insecure transport accepted (--insecure / GPUX_INSECURE=1): ${risk}`;
  const where = opts.source ? ` (the URL comes from ${opts.source})` : '';
  const https = httpsVariant(url);
  throw new InsecureTransportError(
    String(url),
    `refusing to send ${opts.secret}: ${risk}${where}. Fix: use ${https ?? 'an https:// URL'} (put the coordinator behind TLS), or ${INSECURE_HINT} if you accept that anyone on the path can read and reuse the token`,
  );
}

function httpsVariant(url: string | URL): string | null {
  try {
    const u = new URL(String(url));
    if (u.protocol !== 'http:') return null;
    u.protocol = 'https:';
    if (u.port === '80') u.port = '';
    return u.href.replace(/\/+$/, '');
  } catch {
    return null;
  }
}
