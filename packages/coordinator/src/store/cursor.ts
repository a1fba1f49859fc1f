/** Opaque page cursors: base64url of a JSON array holding the last row's sort key. */
import { GpuxError } from '@gpux/core';

export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

/** Decode a cursor made by encodeCursor with the given element types; REQUEST_INVALID otherwise. */
export function decodeCursor<T extends readonly ('string' | 'number')[]>(
  cursor: string,
  types: T,
): { [K in keyof T]: T[K] extends 'number' ? number : string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== types.length || parsed.some((v, i) => typeof v !== types[i])) {
    throw new GpuxError('REQUEST_INVALID', 'invalid page cursor: pass back the nextCursor of a previous page', {
      problems: [{ path: 'cursor', message: 'not a cursor returned by this list' }],
    });
  }
  return parsed as { [K in keyof T]: T[K] extends 'number' ? number : string };
}

/** The id a keyset page by id continues after, or undefined for the first page. */
export function afterId(cursor: string | undefined): string | undefined {
  return cursor ? decodeCursor(cursor, ['string'] as const)[0] : undefined;
}

/** A page of rows read ordered by id with `limit + 1` (the extra row says there is more), mapped to records. */
export function pageById<R, T extends { id: string }>(rows: readonly R[], limit: number, map: (r: R) => T): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit).map(map);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.id]) : null };
}
