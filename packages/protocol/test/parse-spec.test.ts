/**
 * parseJobSpec as a person meets it (issue 16): decimal prices in the job's asset, read exactly; problems that
 * say what is wrong and how to fix it ("image is required", did-you-mean for unknown keys and enum values),
 * each under its path. The coordinator parses with the same error map (SPEC_PARSE_PARAMS).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseJobSpec, plural, priceUnit, readAmountWithAsset, SPEC_PARSE_PARAMS, SubmitJobRequest, unitsPhrase } from '../src/index.js';

const base = { name: 'j', image: 'busybox', command: ['true'] };

/** The problems of a spec that must not parse, as "path: message" lines. */
function problems(spec: unknown): string[] {
  const r = parseJobSpec(spec);
  assert.equal(r.ok, false, 'the spec is refused');
  return r.ok ? [] : r.problems.map((p) => `${p.path}: ${p.message}`);
}

const price = (maxPricePerGpuHour: unknown, extra: object = {}) => {
  const r = parseJobSpec({ ...base, maxPricePerGpuHour, ...extra });
  assert.ok(r.ok, JSON.stringify(r));
  return r.spec.maxPricePerGpuHour;
};

describe('spec prices', () => {
  test('a decimal as text, with or without its asset, is read exactly into minor units', () => {
    assert.equal(price('2.5'), 2_500_000);
    assert.equal(price('2.5 USDC'), 2_500_000);
    assert.equal(price(' 0.000001 usdc '), 1);
    assert.equal(price('3'), 3_000_000, 'text is a decimal amount, as the CLI reads amounts everywhere');
    assert.equal(price('.25'), 250_000);
    assert.equal(price('1.5 CREDIT', { asset: 'credit' }), 1_500_000);
    assert.equal(price('0.1'), 100_000);
    assert.equal(price('1000000.000000'), 1_000_000_000_000);
  });

  test('an integer stays minor units (the wire format); the parsed spec holds an integer either way', () => {
    assert.equal(price(2_500_000), 2_500_000);
    assert.equal(price(0), 0);
    const r = parseJobSpec({ ...base, maxPricePerGpuHour: '2.5' });
    assert.ok(r.ok);
    assert.ok(Number.isSafeInteger(r.spec.maxPricePerGpuHour));
  });

  test('more decimals than the asset has, another asset, a fraction of a minor unit or junk: an error that says so', () => {
    assert.deepEqual(problems({ ...base, maxPricePerGpuHour: '2.1234567' }), ['maxPricePerGpuHour: "2.1234567" has 7 decimals but USDC has 6: round it to at most 6 decimals']);
    assert.match(problems({ ...base, maxPricePerGpuHour: '2.5 CREDIT' })[0] ?? '', /^maxPricePerGpuHour: "2\.5 CREDIT" is in CREDIT but the job pays in USDC: set asset: credit/);
    assert.match(problems({ ...base, maxPricePerGpuHour: '2.5 EUR' })[0] ?? '', /"EUR", which is not an asset/);
    assert.match(problems({ ...base, maxPricePerGpuHour: 2.5 })[0] ?? '', /^maxPricePerGpuHour: 2\.5 is not whole minor units: write the price as text in USDC, "2\.5" or "2\.5 USDC"/);
    assert.match(problems({ ...base, maxPricePerGpuHour: '2,5' })[0] ?? '', /^maxPricePerGpuHour: "2,5" is not a price: write a decimal in USDC/);
    assert.match(problems({ ...base, maxPricePerGpuHour: '-1' })[0] ?? '', /must not be negative/);
    assert.match(problems({ ...base, maxPricePerGpuHour: '1000000.000001' })[0] ?? '', /^maxPricePerGpuHour: must be at most 1000000000000 minor units/);
  });

  test('a price problem is listed with the spec\'s other problems', () => {
    const lines = problems({ name: 'j', command: ['x'], maxPricePerGpuHour: '1.1234567' });
    assert.equal(lines.length, 2, lines.join('\n'));
    assert.match(lines.join('\n'), /image is required/);
  });

  test('readAmountWithAsset names the asset it read', () => {
    assert.deepEqual(readAmountWithAsset('7 credit', 'credit'), { ok: true, minor: 7_000_000 });
    assert.equal(readAmountWithAsset('7 USDC', 'credit').ok, false);
  });
});

describe('spec problems', () => {
  test('a missing field says it is required, with what it is', () => {
    assert.deepEqual(problems({ name: 'j', command: ['x'] }), ['image: image is required — Container image, e.g. "busybox:1.36" or "repo/img@sha256:…"']);
    assert.deepEqual(problems({ image: 'i', command: ['x'] }), ['name: name is required']);
    assert.deepEqual(problems(undefined), ['(root): a job spec is required: a mapping with at least name, image and command']);
  });

  test('an unknown key gets a did-you-mean: a close key, where it belongs, or the keys there are', () => {
    assert.deepEqual(problems({ ...base, resources: { gpuz: 1 } }), ["resources: unknown key 'gpuz' — did you mean 'gpu'?"]);
    assert.deepEqual(problems({ ...base, resources: { gpu: { cuont: 1 } } }), ["resources.gpu: unknown key 'cuont' — did you mean 'count'?"]);
    assert.deepEqual(problems({ ...base, imagee: 'x' }), ["(root): unknown key 'imagee' — did you mean 'image'?"]);
    assert.deepEqual(problems({ ...base, gpu: { count: 1 } }), ["(root): unknown key 'gpu' — it belongs at resources.gpu, not here"]);
    assert.deepEqual(problems({ ...base, resources: { image: 'x' } }), ["resources: unknown key 'image' — it belongs at the top level of the spec, not here"]);
    assert.deepEqual(problems({ ...base, gpus: 1 }), ["(root): unknown key 'gpus' — did you mean resources.gpu?"]);
    assert.deepEqual(problems({ ...base, price: '2' }), ["(root): unknown key 'price' — did you mean 'maxPricePerGpuHour'?"]);
    assert.deepEqual(problems({ ...base, resources: { zzz: 1 } }), ["resources: unknown key 'zzz' — the keys here are gpu, cpuCores, memoryGb"]);
  });

  test('wrong types, bounds and enum values say what the field must be and what was given', () => {
    assert.deepEqual(problems({ ...base, timeoutSeconds: 0 }), ['timeoutSeconds: must be at least 1, got 0']);
    assert.deepEqual(problems({ ...base, nodes: 65 }), ['nodes: must be at most 64, got 65']);
    assert.deepEqual(problems({ ...base, args: 'x' }), ['args: must be a list, got "x"']);
    assert.deepEqual(problems({ ...base, resources: { gpu: { count: 1.5 } } }), ['resources.gpu.count: must be a whole number, got 1.5']);
    assert.deepEqual(problems({ ...base, name: '' }), ['name: must not be empty']);
    assert.deepEqual(problems({ ...base, command: [] }), ['command: must not be empty: give at least one entry']);
    assert.deepEqual(problems({ ...base, priority: 'hgh' }), ['priority: must be one of high, normal or low, got "hgh" — did you mean high?']);
    assert.deepEqual(problems({ ...base, replicas: 3 }), ['replicas: must be one of 1 or 2, got 3']);
    assert.deepEqual(problems({ ...base, env: { '1A': 'x' } }), ['env.1A: the key "1A" must be a valid environment variable name']);
    assert.deepEqual(problems({ ...base, name: 'x'.repeat(200) }), ['name: must be at most 128 characters, got 200']);
  });

  test('an input of no known form gets the closest form\'s problems and the forms there are', () => {
    assert.deepEqual(problems({ ...base, inputs: [{ path: 'a', contnet: 'x' }] }), [
      "inputs.0: content is required; unknown key 'contnet' — did you mean 'content'? (one of {path, content}, {path, blob, size} or {path, url, sha256, size})",
    ]);
    assert.deepEqual(problems({ ...base, inputs: [5] }), ['inputs.0: must be a mapping (key: value), got 5']);
  });

  test('hostile values are not echoed at length', () => {
    const [line] = problems({ ...base, priority: 'x'.repeat(10_000) });
    assert.ok((line ?? '').length < 200, line);
  });

  test('the coordinator\'s submit body, parsed with SPEC_PARSE_PARAMS, says the same under spec.', () => {
    const r = SubmitJobRequest.safeParse({ spec: { name: 'j', command: ['x'], resources: { gpuz: 1 }, maxPricePerGpuHour: '2.5' } }, SPEC_PARSE_PARAMS);
    assert.equal(r.success, false);
    const lines = r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    assert.ok(lines.includes('spec.image: image is required — Container image, e.g. "busybox:1.36" or "repo/img@sha256:…"'), lines.join('\n'));
    assert.ok(lines.includes("spec.resources: unknown key 'gpuz' — did you mean 'gpu'?"), lines.join('\n'));
    // The wire takes minor units only: the 400 says so and names the CLI's decimal form.
    assert.ok(lines.some((l) => /^spec\.maxPricePerGpuHour: must be whole minor units .*got "2\.5".*"2\.5 USDC"/.test(l)), lines.join('\n'));
  });
});

describe('units in words', () => {
  test('singular and plural, GPU-hour or job-hour', () => {
    assert.equal(plural(1, 'node'), '1 node');
    assert.equal(plural(2, 'node'), '2 nodes');
    assert.equal(priceUnit(0), 'job-hour');
    assert.equal(priceUnit(8), 'GPU-hour');
    assert.equal(unitsPhrase(1, 1, 1), '1 GPU × 1 node');
    assert.equal(unitsPhrase(8, 8, 2), '8 GPUs × 2 nodes');
    assert.equal(unitsPhrase(0, 1, 1), '1 node');
    assert.equal(unitsPhrase(0, 1), '1 job');
  });
});
