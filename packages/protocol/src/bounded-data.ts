/**
 * Bounds for free-form JSON a node sends (the data of attempt events): nesting depth, keys per object,
 * items per array, string length and total size. Checked without recursion past the depth limit, so
 * hostile input (10,000 levels deep) is refused with a clear message, never a stack overflow.
 */
import { z } from 'zod';

export const EVENT_DATA_LIMITS = {
  /** Objects/arrays inside the top-level object: `{a:{b:1}}` is depth 2. */
  maxDepth: 4,
  maxKeys: 32,
  maxArrayItems: 64,
  maxKeyLength: 64,
  maxStringLength: 1024,
  /** JSON.stringify length of the whole data object. */
  maxBytes: 4096,
} as const;

/** The first rule `v` breaks, as [path, message]; undefined when it keeps them all. */
export function boundedJsonProblem(v: unknown, limits: typeof EVENT_DATA_LIMITS = EVENT_DATA_LIMITS): [string, string] | undefined {
  const stack: { v: unknown; path: string; depth: number }[] = [{ v, path: '', depth: 1 }];
  while (stack.length > 0) {
    const { v: cur, path, depth } = stack.pop() as { v: unknown; path: string; depth: number };
    if (typeof cur === 'string') {
      if (cur.length > limits.maxStringLength) return [path, `has a string longer than ${limits.maxStringLength} characters`];
      continue;
    }
    if (cur === null || typeof cur !== 'object') continue;
    if (depth > limits.maxDepth) return [path, `is nested deeper than ${limits.maxDepth} levels`];
    if (Array.isArray(cur)) {
      if (cur.length > limits.maxArrayItems) return [path, `has an array of more than ${limits.maxArrayItems} items`];
      cur.forEach((x, i) => {
        stack.push({ v: x, path: `${path}.${i}`, depth: depth + 1 });
      });
      continue;
    }
    const keys = Object.keys(cur);
    if (keys.length > limits.maxKeys) return [path, `has an object with more than ${limits.maxKeys} keys`];
    for (const k of keys) {
      if (k.length > limits.maxKeyLength) return [path, `has a key longer than ${limits.maxKeyLength} characters`];
      stack.push({ v: (cur as Record<string, unknown>)[k], path: path ? `${path}.${k}` : k, depth: depth + 1 });
    }
  }
  if (JSON.stringify(v).length > limits.maxBytes) return ['', `is larger than ${limits.maxBytes} bytes of JSON`];
  return undefined;
}

/** A JSON object within EVENT_DATA_LIMITS; a breach is a schema problem (400), never a server error. */
export const BoundedEventData = z.record(z.string(), z.unknown()).superRefine((data, ctx) => {
  const problem = boundedJsonProblem(data);
  if (problem) ctx.addIssue({ code: 'custom', message: `event data ${problem[1]}`, path: problem[0] ? problem[0].split('.') : [] });
});
