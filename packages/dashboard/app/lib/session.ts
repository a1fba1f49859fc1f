/**
 * The signed-in token and account, kept in sessionStorage: they live as long as the tab and never reach other
 * sites. The account is remembered so a reload renders at once; the API still checks the token on every call.
 */
const TOKEN = 'gpux.token';
const ACCOUNT = 'gpux.account';
export const SIGNED_OUT_EVENT = 'gpux:signed-out';

export interface Account {
  accountId: string;
  role: 'buyer' | 'operator';
}

function read(key: string): string | null {
  try {
    return sessionStorage.getItem(key);
  } catch {
    return null;
  }
}

export function getToken(): string | null {
  return read(TOKEN);
}

export function getAccount(): Account | null {
  if (!getToken()) return null;
  try {
    const a = JSON.parse(read(ACCOUNT) ?? 'null') as Account | null;
    return a && typeof a.accountId === 'string' && (a.role === 'buyer' || a.role === 'operator') ? a : null;
  } catch {
    return null;
  }
}

export function signIn(token: string, account: Account): void {
  sessionStorage.setItem(TOKEN, token);
  sessionStorage.setItem(ACCOUNT, JSON.stringify(account));
}

export function clearToken(): void {
  try {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(ACCOUNT);
  } catch {
    // storage disabled: nothing to clear
  }
  window.dispatchEvent(new Event(SIGNED_OUT_EVENT));
}
