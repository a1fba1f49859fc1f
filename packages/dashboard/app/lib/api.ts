/** The dashboard's only way to data: fetch on the coordinator's own origin with the bearer token. */
import type { ErrorBody } from '@gpux/protocol';
import { clearToken, getToken } from './session.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ApiOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  signal?: AbortSignal;
  /** Use this token instead of the session's (sign-in checks a token before keeping it). */
  token?: string;
}

export async function api<T>(path: string, opts: ApiOptions = {}): Promise<T> {
  const token = opts.token ?? getToken();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method: opts.method ?? 'GET',
    headers,
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const err = (parsed as Partial<ErrorBody> | undefined)?.error;
    // A session token that stopped working (revoked, or a new coordinator database): back to sign-in.
    if (res.status === 401 && !opts.token) clearToken();
    throw new ApiError(res.status, err?.code ?? 'HTTP', err?.message ?? `${res.status} ${res.statusText}`);
  }
  return parsed as T;
}

export const isAbort = (e: unknown): boolean => e instanceof DOMException && e.name === 'AbortError';

/** Build a query string from defined values. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
