/** Load a job spec file (YAML or JSON, `-` for stdin) and validate it locally before anything is sent. */
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describeInput, type JobSpec, parseJobSpec, type Problem } from '@gpux/protocol';
import { isMap, isScalar, LineCounter, parseDocument, visit } from 'yaml';
import { usageError } from './errors.js';

export async function readStdin(stream: AsyncIterable<unknown> = process.stdin): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * An input written `{ path, file: ./local }` in the spec file (issue 13): `gpux job submit` uploads the file as a
 * blob and sends `{ path, blob, size }` in its place. `file` is resolved relative to the spec file.
 */
export interface LocalInput {
  /** Its index in spec.inputs (which holds a placeholder blob input until the upload replaces it). */
  index: number;
  path: string;
  file: string;
  size: number;
}

export interface LoadedSpec {
  spec: JobSpec;
  localInputs: LocalInput[];
  /** `encrypted: true` in the file (issue 13): submit it end-to-end encrypted, as `--encrypt` does. */
  encrypted?: boolean;
}

/** A blob digest that stands in for a local file while the rest of the spec is validated (no upload yet). */
const PLACEHOLDER_BLOB = '0'.repeat(64);

/**
 * Parse spec text; YAML is a superset of JSON, so one parser reads both. `{path, file}` inputs are checked (the
 * file must exist) and stand in as blob inputs while the spec is validated. Throws a usage error with problems.
 */
export function parseSpecDocument(text: string, source: string, baseDir: string): LoadedSpec {
  const data = readYaml(text, source);
  if (data === null || data === undefined) throw usageError(`${source} is empty`);
  const localInputs = takeLocalInputs(data, source, baseDir);
  // `encrypted: true` is a CLI instruction, not a spec field: gpux job submit encrypts and sets `encryption`.
  const flag = typeof data === 'object' && 'encrypted' in data ? (data as { encrypted?: unknown }).encrypted : undefined;
  if (flag !== undefined && typeof flag !== 'boolean') throw usageError(`${source} is not a valid job spec`, [{ path: 'encrypted', message: `must be true or false, got ${describeInput(flag)}` }]);
  if (flag !== undefined) delete (data as { encrypted?: unknown }).encrypted;
  const result = parseJobSpec(data);
  if (!result.ok) throw usageError(`${source} is not a valid job spec`, result.problems);
  return { spec: result.spec, localInputs, ...(flag === true ? { encrypted: true } : {}) };
}

/**
 * The document as plain data, or a usage error naming the first YAML problem by line and column (once: a
 * parser's later errors at the same spot are echoes of the first). A price written as a decimal number
 * (2.5, 2.0) is kept as its source text so it is read exactly, in the asset, never through a float.
 */
function readYaml(text: string, source: string): unknown {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const first = doc.errors[0];
  if (first) throw yamlError(source, first.linePos?.[0] ?? lines.linePos(first.pos[0]), first.message);
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // An alias whose anchor is missing (or too many aliases): point at the first alias.
    let at = 0;
    visit(doc, {
      Alias: (_, node) => {
        at = node.range?.[0] ?? 0;
        return visit.BREAK;
      },
    });
    throw yamlError(source, lines.linePos(at), (err as Error).message);
  }
  const price = isMap(doc.contents) ? doc.contents.get('maxPricePerGpuHour', true) : undefined;
  if (isScalar(price) && typeof price.value === 'number' && price.range && data !== null && typeof data === 'object') {
    const written = text.slice(price.range[0], price.range[1]).trim();
    if (/[.eE]/.test(written)) (data as Record<string, unknown>).maxPricePerGpuHour = written;
  }
  return data;
}

function yamlError(source: string, pos: { line: number; col: number }, message: string) {
  const text = (message.split('\n')[0] ?? message).replace(/ at line \d+, column \d+:?$/, '');
  return usageError(`${source} is not valid YAML or JSON`, [{ path: `line ${pos.line}, column ${pos.col}`, message: text }]);
}

/** Replaces each `{path, file}` input of the raw spec by a placeholder blob input of the file's size. */
function takeLocalInputs(data: unknown, source: string, baseDir: string): LocalInput[] {
  const inputs = (data as { inputs?: unknown }).inputs;
  if (!Array.isArray(inputs)) return [];
  const found: LocalInput[] = [];
  const problems: Problem[] = [];
  for (const [index, entry] of inputs.entries()) {
    if (entry === null || typeof entry !== 'object' || !('file' in entry)) continue;
    const { path, file, ...rest } = entry as { path?: unknown; file?: unknown };
    const problem = localFileProblem(file, rest, baseDir);
    if (typeof problem === 'object') {
      problems.push({ path: `inputs.${index}${problem.key ? `.${problem.key}` : ''}`, message: problem.message });
      continue;
    }
    found.push({ index, path: String(path), file: resolve(baseDir, file as string), size: problem });
    inputs[index] = { path, blob: PLACEHOLDER_BLOB, size: problem };
  }
  if (problems.length > 0) throw usageError(`${source} names local input files that cannot be uploaded`, problems);
  return found;
}

/** The file's size, or what is wrong with the entry. */
function localFileProblem(file: unknown, rest: object, baseDir: string): number | { key: string; message: string } {
  if (typeof file !== 'string' || file.length === 0) return { key: 'file', message: 'must be a local file path (relative to the spec file)' };
  if (Object.keys(rest).length > 0) return { key: '', message: `a {path, file} input has only those two keys (found ${Object.keys(rest).join(', ')})` };
  const abs = resolve(baseDir, file);
  try {
    const st = statSync(abs);
    return st.isFile() ? st.size : { key: 'file', message: `${abs} is not a regular file` };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { key: 'file', message: code === 'ENOENT' ? `${abs} does not exist` : `cannot read ${abs}: ${(err as Error).message}` };
  }
}

/** Parse spec text that must not name local files (nothing here uploads them). */
export function parseSpecText(text: string, source: string): JobSpec {
  const { spec, localInputs } = parseSpecDocument(text, source, process.cwd());
  if (localInputs.length > 0) throw usageError(`${source} has {path, file} inputs: submit it with \`gpux job submit\`, which uploads them`);
  return spec;
}

/** Read and validate a spec file (or `-`: stdin, local files then relative to the working directory). */
export async function loadSpecWithFiles(file: string, stdin: () => Promise<string> = () => readStdin()): Promise<LoadedSpec> {
  if (file === '-') return parseSpecDocument(await stdin(), 'the spec on stdin', process.cwd());
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw usageError(code === 'ENOENT' ? `spec file ${file} does not exist` : `cannot read spec file ${file}: ${(err as Error).message}`);
  }
  return parseSpecDocument(text, `spec file ${file}`, dirname(resolve(file)));
}

export async function loadSpecFile(file: string, stdin: () => Promise<string> = () => readStdin()): Promise<JobSpec> {
  const { spec, localInputs } = await loadSpecWithFiles(file, stdin);
  if (localInputs.length > 0) throw usageError(`${file === '-' ? 'the spec on stdin' : `spec file ${file}`} has {path, file} inputs: submit it with \`gpux job submit\`, which uploads them`);
  return spec;
}
