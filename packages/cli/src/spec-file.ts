/** Load a job spec file (YAML or JSON, `-` for stdin) and validate it locally before anything is sent. */
import { readFileSync } from 'node:fs';
import { type JobSpec, parseJobSpec, type Problem } from '@gpux/protocol';
import { parseDocument } from 'yaml';
import { usageError } from './errors.js';

export async function readStdin(stream: AsyncIterable<unknown> = process.stdin): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** Parse spec text; YAML is a superset of JSON, so one parser reads both. Throws a usage error with problems. */
export function parseSpecText(text: string, source: string): JobSpec {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) {
    const problems: Problem[] = doc.errors.map((e) => ({ path: e.linePos?.[0] ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '(file)', message: (e.message.split('\n')[0] ?? e.message).replace(/ at line \d+, column \d+:?$/, '') }));
    throw usageError(`${source} is not valid YAML or JSON`, problems);
  }
  const data: unknown = doc.toJS();
  if (data === null || data === undefined) throw usageError(`${source} is empty`);
  const result = parseJobSpec(data);
  if (!result.ok) throw usageError(`${source} is not a valid job spec`, result.problems);
  return result.spec;
}

export async function loadSpecFile(file: string, stdin: () => Promise<string> = () => readStdin()): Promise<JobSpec> {
  if (file === '-') return parseSpecText(await stdin(), 'the spec on stdin');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw usageError(code === 'ENOENT' ? `spec file ${file} does not exist` : `cannot read spec file ${file}: ${(err as Error).message}`);
  }
  return parseSpecText(text, `spec file ${file}`);
}
