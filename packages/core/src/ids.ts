/** Time-sortable ids: prefix + 10 chars of ms timestamp + 12 random chars (Crockford base32, like ULID). */
import type { Random } from './ports.js';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export function newId(prefix: string, now: number, random: Random): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = random.bytes(12);
  let rand = '';
  for (const b of bytes) rand += ALPHABET[b % 32];
  return `${prefix}-${time}${rand}`;
}
