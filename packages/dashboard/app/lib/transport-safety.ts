/**
 * No secrets in clear (issue 19): the dashboard sends the token same-origin, so the page's own origin decides.
 * Mirrors isLoopbackHost of @gpux/protocol (test/transport-safety.test.ts checks they agree): importing it would
 * pull the protocol's zod schemas into the bundle, and the rule is four lines.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host === '[::1]') return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return true;
  return /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host);
}

/** Null when a token typed on this page stays safe (https, or plain http on loopback); else the warning to show. */
export function clearTextTokenRisk(location: { protocol: string; hostname: string; origin: string }): string | null {
  if (location.protocol === 'https:') return null;
  if (location.protocol === 'http:' && isLoopbackHost(location.hostname)) return null;
  return `This page was loaded over plain HTTP from ${location.origin}: your token would cross the network in clear, and anyone on the path could read and reuse it. Ask the operator to serve gpux over HTTPS.`;
}
