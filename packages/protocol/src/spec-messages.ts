/**
 * What a job spec's problems say, in place of zod's default text ("Invalid input: expected string, received
 * undefined"): "image is required", "unknown key 'gpuz' — did you mean 'gpu'?", "must be at least 1, got 0".
 * A zod error map, so the schema's own messages (refinements, custom limits) still win. parseJobSpec and the
 * coordinator's submit route both parse with SPEC_PARSE_PARAMS, so the CLI and the API's 400 say the same.
 */
import type { z } from 'zod';
import { JobSpec } from './job-spec.js';

/** The parts of a raw zod issue these messages read (zod's own type is a wide union). */
interface RawIssue {
  code: string;
  path?: PropertyKey[];
  input?: unknown;
  inst?: unknown;
  expected?: string;
  keys?: string[];
  values?: unknown[];
  minimum?: number | bigint;
  maximum?: number | bigint;
  inclusive?: boolean;
  origin?: string;
  errors?: FinalIssue[][];
  issues?: FinalIssue[];
}
interface FinalIssue {
  code: string;
  path: PropertyKey[];
  message: string;
  values?: unknown[];
}
/** A zod schema as seen through its definition (only what the walk below reads). */
interface SchemaDef {
  type: string;
  shape?: Record<string, SchemaNode>;
  innerType?: SchemaNode;
  element?: SchemaNode;
  options?: SchemaNode[];
  in?: SchemaNode;
}
interface SchemaNode {
  _zod: { def: SchemaDef; optin?: string };
  description?: string;
}

const PRICE_KEY = 'maxPricePerGpuHour';

export const specErrorMap: z.core.$ZodErrorMap = (raw) => messageFor(raw as unknown as RawIssue);

/** Pass as safeParse's second argument wherever a job spec (or a body holding one) is parsed. */
export const SPEC_PARSE_PARAMS = { error: specErrorMap } as const;

function messageFor(iss: RawIssue): string | undefined {
  switch (iss.code) {
    case 'invalid_type':
      return typeMessage(iss);
    case 'unrecognized_keys':
      return unknownKeysMessage(iss);
    case 'too_small':
    case 'too_big':
      return sizeMessage(iss);
    case 'invalid_value':
      return oneOfMessage(iss.values ?? [], iss.input);
    case 'invalid_union':
      return unionMessage(iss);
    case 'invalid_key':
      return `the key ${describeInput(iss.input)} ${iss.issues?.[0]?.message ?? 'is not allowed here'}`;
    default:
      return undefined;
  }
}

const lastKey = (path: PropertyKey[] = []) => {
  const keys = path.filter((k): k is string => typeof k === 'string');
  return keys[keys.length - 1];
};

const EXPECTED: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping (key: value)',
  record: 'a mapping (key: value)',
};

/** A short, safe rendering of what was given (the input is hostile: never long, never raw). */
export function describeInput(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return v.length > 40 ? 'a long text' : JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return typeof v === 'object' ? 'a mapping' : typeof v;
}

function typeMessage(iss: RawIssue): string {
  const key = lastKey(iss.path);
  if (iss.input === undefined) {
    if (key === undefined) return 'a job spec is required: a mapping with at least name, image and command';
    const hint = (iss.inst as SchemaNode | undefined)?.description;
    return `${key} is required${hint ? ` — ${hint}` : ''}`;
  }
  const got = describeInput(iss.input);
  if (key === PRICE_KEY) {
    return `must be whole minor units (6 decimals: 2500000 is 2.5), got ${got}; a spec file read by the gpux CLI may also write the price as text, "2.5" or "2.5 USDC"`;
  }
  return `must be ${EXPECTED[iss.expected ?? ''] ?? iss.expected}, got ${got}`;
}

function sizeMessage(iss: RawIssue): string | undefined {
  const small = iss.code === 'too_small';
  const bound = small ? iss.minimum : iss.maximum;
  if (bound === undefined) return undefined;
  const n = Number(bound);
  const inclusive = iss.inclusive !== false;
  switch (iss.origin) {
    case 'number':
    case 'int':
      return `must be ${small ? (inclusive ? 'at least' : 'more than') : inclusive ? 'at most' : 'less than'} ${n}, got ${describeInput(iss.input)}`;
    case 'string':
      if (small && n === 1) return 'must not be empty';
      return `must be ${small ? 'at least' : 'at most'} ${n} characters, got ${typeof iss.input === 'string' ? iss.input.length : '?'}`;
    case 'array':
      if (small && n === 1) return 'must not be empty: give at least one entry';
      return `must have ${small ? 'at least' : 'at most'} ${n} entries, got ${Array.isArray(iss.input) ? iss.input.length : '?'}`;
    default:
      return undefined;
  }
}

function oneOfMessage(values: unknown[], input: unknown): string {
  const shown = values.map((v) => (typeof v === 'string' ? v : String(v)));
  const guess = typeof input === 'string' ? closest(input, shown) : undefined;
  const list = shown.length === 1 ? shown[0] : `one of ${shown.slice(0, -1).join(', ')} or ${shown[shown.length - 1]}`;
  return `must be ${list}, got ${describeInput(input)}${guess ? ` — did you mean ${guess}?` : ''}`;
}

/** Keys a mapping schema takes, required first: "{path, content}" when listing what an input may be. */
function requiredKeys(node: SchemaNode): string[] {
  const shape = node._zod.def.shape ?? {};
  return Object.keys(shape).filter((k) => shape[k]?._zod.optin === undefined);
}

/**
 * One of several forms (an input: inline, blob or URL; replicas: 1 or 2). The closest form's problems
 * (fewest issues) are the likely fix; the forms are listed so the writer sees the others.
 */
function unionMessage(iss: RawIssue): string | undefined {
  const errors = iss.errors ?? [];
  if (errors.length === 0) return undefined;
  if (errors.every((e) => e.length === 1 && e[0]?.code === 'invalid_value')) return oneOfMessage(errors.flatMap((e) => e[0]?.values ?? []), iss.input);
  if (iss.input === null || typeof iss.input !== 'object' || Array.isArray(iss.input)) return `must be a mapping (key: value), got ${describeInput(iss.input)}`;
  const best = errors.reduce((a, b) => (b.length < a.length ? b : a));
  const detail = best.map((e) => (e.path.length === 0 || e.message.startsWith(`${String(e.path[e.path.length - 1])} `) ? e.message : `${e.path.map(String).join('.')}: ${e.message}`)).join('; ');
  const options = ((iss.inst as SchemaNode | undefined)?._zod.def.options ?? []).filter((o) => o._zod.def.type === 'object').map((o) => `{${requiredKeys(o).join(', ')}}`);
  return options.length > 1 ? `${detail} (one of ${options.slice(0, -1).join(', ')} or ${options[options.length - 1]})` : detail;
}

function unknownKeysMessage(iss: RawIssue): string | undefined {
  const shape = (iss.inst as SchemaNode | undefined)?._zod.def.shape;
  if (!shape || !iss.keys?.length) return undefined;
  const known = Object.keys(shape);
  const keys = iss.keys;
  const told: string[] = [];
  const unmatched: string[] = [];
  for (const k of keys.slice(0, MAX_KEYS_TOLD)) {
    const hint = suggestKey(k, known);
    if (hint) told.push(`unknown key ${showKey(k)} — ${hint}`);
    else unmatched.push(showKey(k));
  }
  if (unmatched.length) told.push(`unknown key${unmatched.length > 1 ? 's' : ''} ${unmatched.join(', ')} — the keys here are ${known.join(', ')}`);
  if (keys.length > MAX_KEYS_TOLD) told.push(`and ${keys.length - MAX_KEYS_TOLD} more unknown keys`);
  return told.join('; ');
}

/** Hostile specs may carry thousands of unknown keys: the first few are named (and searched for a near key). */
const MAX_KEYS_TOLD = 5;

/** A key as written, quoted; long or odd ones clipped and escaped, as they come from the sender. */
function showKey(k: string): string {
  const c = k.length > 40 ? `${k.slice(0, 40)}…` : k;
  return /^[\w.-]+$/.test(c) ? `'${c}'` : JSON.stringify(c);
}

/** A close key here, or where the key (or a close one) belongs elsewhere in a spec; undefined when none is near. */
function suggestKey(key: string, known: string[]): string | undefined {
  const near = closest(key, known);
  if (near) return `did you mean '${near}'?`;
  const paths = specKeyPaths();
  const same = paths.get(key.toLowerCase());
  if (same) return `it belongs ${same.includes('.') ? `at ${same}` : 'at the top level of the spec'}, not here`;
  const other = paths.get(closest(key, [...paths.keys()]) ?? '');
  if (other) return `did you mean ${other.includes('.') ? other : `'${other}' at the top level of the spec`}?`;
  const part = key.length >= 4 ? known.find((k) => k.toLowerCase().includes(key.toLowerCase())) : undefined;
  return part ? `did you mean '${part}'?` : undefined;
}

/** The closest candidate within a small edit distance (case-insensitive), or undefined. */
export function closest(word: string, candidates: string[]): string | undefined {
  const w = word.toLowerCase();
  const limit = w.length <= 4 ? 1 : 2;
  let best: { c: string; d: number } | undefined;
  for (const c of candidates) {
    const d = editDistance(w, c.toLowerCase());
    if (d <= limit && (best === undefined || d < best.d)) best = { c, d };
  }
  return best?.c;
}

/** Edit distance with adjacent transpositions ("gpuz" → "gpu" is 1, "cuont" → "count" is 1). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return 4;
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i] as number[];
      const prev = d[i - 1] as number[];
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

let keyPaths: Map<string, string> | undefined;

/** Every nested key of a job spec → its full path ("count" → "resources.gpu.count"), for a key put at the wrong level. */
function specKeyPaths(): Map<string, string> {
  if (keyPaths) return keyPaths;
  const found = new Map<string, string>();
  const walk = (node: SchemaNode | undefined, prefix: string, depth: number) => {
    const def = node?._zod.def;
    if (!def || depth > 4) return;
    const inner = def.innerType ?? def.in ?? def.element;
    if (inner) return walk(inner, prefix, depth);
    for (const o of def.options ?? []) walk(o, prefix, depth);
    for (const [k, child] of Object.entries(def.shape ?? {})) {
      const path = prefix ? `${prefix}.${k}` : k;
      // Inputs' keys depend on the input's form: the union's own message covers them.
      if (!prefix.startsWith('inputs') && !found.has(k.toLowerCase())) found.set(k.toLowerCase(), path);
      walk(child, path, depth + 1);
    }
  };
  walk(JobSpec as unknown as SchemaNode, '', 0);
  keyPaths = found;
  return found;
}
