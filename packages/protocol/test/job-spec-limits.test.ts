/**
 * The job spec's bounds (issue 10 item 7): MAX_SPEC_BYTES of UTF-8 JSON without inline inputs, counted and
 * sized command/args/env entries, bounded labels, models and regions; and the schema never throws, whatever
 * it is given (a property test over arbitrary values).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { JobSpec, MAX_ARG_CHARS, MAX_ARGV_ENTRIES, MAX_ENV_VARS, MAX_SPEC_BYTES, parseJobSpec, specBytesWithoutInputs } from '../src/index.js';

const base = { name: 'n', image: 'busybox:1.36', command: ['sh'] };

/** A spec whose stored JSON (defaults in, inputs out) is exactly `bytes` long. */
function specOfBytes(bytes: number) {
  const s = JobSpec.parse(base);
  s.args.push('');
  const missing = bytes - specBytesWithoutInputs(s);
  s.args[0] = 'a'.repeat(missing);
  assert.equal(specBytesWithoutInputs(s), bytes);
  return s;
}

describe('job spec bounds', () => {
  test('the whole spec: MAX_SPEC_BYTES is accepted, one byte more is not, and the message names the limit', () => {
    const s = specOfBytes(MAX_SPEC_BYTES);
    // 8 KiB per argument: spread the filler over entries that each stay within their own bound.
    const filler = s.args[0] as string;
    s.args = filler.match(new RegExp(`.{1,${MAX_ARG_CHARS}}`, 'gs')) as string[];
    const stored = specBytesWithoutInputs(s);
    const trimmed = JobSpec.parse({ ...s, args: [...s.args.slice(0, -1), (s.args.at(-1) as string).slice(0, (s.args.at(-1) as string).length - (stored - MAX_SPEC_BYTES))] });
    assert.equal(specBytesWithoutInputs(trimmed), MAX_SPEC_BYTES);
    assert.equal(parseJobSpec(trimmed).ok, true);
    const over = { ...trimmed, args: [...trimmed.args.slice(0, -1), `${trimmed.args.at(-1)}a`] };
    const r = parseJobSpec(over);
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.problems[0]?.message ?? '', new RegExp(`${MAX_SPEC_BYTES + 1} bytes .* the most is ${MAX_SPEC_BYTES}`));
  });

  test('bytes are UTF-8: a multi-byte character counts for its bytes', () => {
    const ascii = JobSpec.parse({ ...base, env: { A: 'a' } });
    const euro = JobSpec.parse({ ...base, env: { A: '€' } });
    assert.equal(specBytesWithoutInputs(euro) - specBytesWithoutInputs(ascii), 2);
  });

  test('inline inputs do not count towards MAX_SPEC_BYTES (they have their own 1 MiB)', () => {
    const r = parseJobSpec({ ...base, inputs: [{ path: 'in.txt', content: 'x'.repeat(MAX_SPEC_BYTES * 4) }] });
    assert.equal(r.ok, true);
  });

  test('counts: command and args entries, env variables', () => {
    assert.equal(parseJobSpec({ ...base, command: Array(MAX_ARGV_ENTRIES).fill('x') }).ok, true);
    assert.equal(parseJobSpec({ ...base, command: Array(MAX_ARGV_ENTRIES + 1).fill('x') }).ok, false);
    assert.equal(parseJobSpec({ ...base, args: Array(MAX_ARGV_ENTRIES + 1).fill('x') }).ok, false);
    const env = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`V${i}`, '1']));
    assert.equal(parseJobSpec({ ...base, env: env(MAX_ENV_VARS) }).ok, true);
    assert.equal(parseJobSpec({ ...base, env: env(MAX_ENV_VARS + 1) }).ok, false);
  });

  test('JobSpec.safeParse never throws and never passes a spec over its bounds, for any input', () => {
    const near = fc.record(
      {
        name: fc.string({ maxLength: 200 }),
        image: fc.string({ maxLength: 600 }),
        command: fc.array(fc.string({ maxLength: 20 }), { maxLength: 300 }),
        args: fc.array(fc.string({ maxLength: 9000 }), { maxLength: 12 }),
        env: fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 9000 }), { maxKeys: 12 }),
        labels: fc.dictionary(fc.string({ maxLength: 70 }), fc.string({ maxLength: 300 }), { maxKeys: 70 }),
        maxPricePerGpuHour: fc.oneof(fc.integer(), fc.double(), fc.constant(Number.MAX_SAFE_INTEGER)),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.oneof(fc.anything(), near), (v) => {
        const r = JobSpec.safeParse(v);
        if (r.success) assert.ok(specBytesWithoutInputs(r.data) <= MAX_SPEC_BYTES);
      }),
      { numRuns: 500 },
    );
  });
});
