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
