/** Who made a request: the account behind a bearer token (http/bearer-auth.ts authenticates it; services decide with it). */
import type { Role } from '@gpux/core';

export interface Principal {
  tokenId: string;
  accountId: string;
  role: Role;
}

/** Buyers see only their own jobs; operators see all. Someone else's job reads as missing, not forbidden. */
export function canSeeBuyer(p: Principal, buyerId: string): boolean {
  return p.role === 'operator' || p.accountId === buyerId;
}
