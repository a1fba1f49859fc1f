/**
 * Failed authentications per client address (issue 19): a bad bearer token, a bad enrollment token or a bad
 * node signature each take one token from the address's bucket (`perMinute` of them, refilled at that rate);
 * an empty bucket blocks the address's authenticated requests until a token is back. Guessing credentials
 * from one address is then as slow as the bucket. The address is the client's as Fastify sees it: the socket's
 * peer, or the forwarded one when the peer is a trusted proxy (GPUX_TRUST_PROXY).
 *
 * Memory is bounded: buckets that are full again are swept, and past `maxKeys` addresses the least recently
 * failing one is forgotten (an attacker churning addresses gains nothing per address from it). IPv6 clients
 * are keyed by their /64, the block one subscriber usually holds, so rotating within it does not help.
 */
import { isIPv4, isIPv6 } from 'node:net';

export const AUTH_FAILURE_MAX_KEYS = 100_000;

interface Bucket {
  tokens: number;
  at: number;
  /** The current block was logged already (one warning per block, not one per refused request). */
  warned: boolean;
}

export class AuthFailures {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep = 0;

  constructor(
    private readonly perMinute: number,
    private readonly maxKeys = AUTH_FAILURE_MAX_KEYS,
  ) {}

  /** 0 when `address` may try to authenticate now; else the milliseconds until it may. Counts nothing. */
  blockedFor(address: string, now: number): number {
    const b = this.buckets.get(clientKey(address));
    if (!b) return 0;
    this.refill(b, now);
    return b.tokens >= 1 ? 0 : Math.ceil((1 - b.tokens) / (this.perMinute / 60_000));
  }

  /** Count one failed authentication from `address`. */
  fail(address: string, now: number): void {
    this.sweep(now);
    const key = clientKey(address);
    const b = this.buckets.get(key) ?? { tokens: this.perMinute, at: now, warned: false };
    this.refill(b, now);
    b.tokens = Math.max(0, b.tokens - 1);
    // Re-insert so the map's order is least recently failing first: the one to drop when full.
    this.buckets.delete(key);
    if (this.buckets.size >= this.maxKeys) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
    this.buckets.set(key, b);
  }

  /** True once per block: the first refused request of a block is logged as a warning, the rest at debug. */
  firstRefusal(address: string): boolean {
    const b = this.buckets.get(clientKey(address));
    if (!b || b.warned) return false;
    b.warned = true;
    return true;
  }

  get size(): number {
    return this.buckets.size;
  }

  private refill(b: Bucket, now: number): void {
    b.tokens = Math.min(this.perMinute, b.tokens + Math.max(0, now - b.at) * (this.perMinute / 60_000));
    b.at = now;
    if (b.tokens >= 1) b.warned = false;
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    // A bucket untouched for a minute is full again: forgetting it changes nothing.
    for (const [k, b] of this.buckets) if (now - b.at >= 60_000) this.buckets.delete(k);
  }
}

/** The limiter's key for an address: IPv4 as is (also when IPv4-mapped), IPv6 by its /64, anything else as is. */
export function clientKey(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped?.[1]) return mapped[1];
  if (isIPv4(address)) return address;
  const bare = address.split('%')[0] ?? address;
  if (!isIPv6(bare)) return address;
  const groups = expandIPv6(bare);
  return `${groups.slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, as lowercase hex without leading zeros. */
function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.split('::');
  const part = (s: string | undefined): string[] => {
    if (!s) return [];
    const out: string[] = [];
    for (const g of s.split(':')) {
      if (g.includes('.')) {
        // An embedded IPv4 tail (e.g. 64:ff9b::1.2.3.4) is two groups.
        const [a = 0, b = 0, c = 0, d = 0] = g.split('.').map(Number);
        out.push(((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
      } else out.push(Number.parseInt(g, 16).toString(16));
    }
    return out;
  };
  const left = part(head);
  const right = part(tail);
  const fill = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right];
}
