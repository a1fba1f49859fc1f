/**
 * Security headers on every response: a strict Content-Security-Policy (the dashboard's own origin only, for its
 * HTML; nothing at all for the API's JSON and text), no framing (frame-ancestors 'none' and X-Frame-Options DENY),
 * no MIME sniffing and no referrer. Over HTTPS also HSTS, so a browser that has seen the dashboard once never
 * falls back to plain HTTP (where a token could be read on the path).
 */
import type { FastifyInstance } from 'fastify';

/**
 * What the built dashboard needs: its scripts, styles and fetches on the same origin, and the data: favicon. No
 * inline script or style (React sets styles through the DOM, which CSP allows).
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** JSON and text: nothing to load, nothing to run, never framed. */
export const API_CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** One year, the usual HSTS lifetime; no includeSubDomains: the coordinator cannot speak for its siblings. */
export const HSTS = 'max-age=31536000';

export function installSecurityHeaders(app: FastifyInstance, opts: { hsts?: boolean } = {}): void {
  app.addHook('onSend', async (_req, reply, payload) => {
    const type = String(reply.getHeader('content-type') ?? '');
    // A route may set its own policy (the dashboard's not-built page); the rest get the one for their type.
    if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', type.startsWith('text/html') ? DASHBOARD_CSP : API_CSP);
    reply.header('x-frame-options', 'DENY');
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('cross-origin-opener-policy', 'same-origin');
    if (opts.hsts) reply.header('strict-transport-security', HSTS);
    return payload;
  });
}
