/**
 * Issue 16, spec files through `gpux job submit` against a real coordinator: decimal prices in the asset
 * ("2.5", 2.5, "2.5 USDC", 2.0) arrive as exact minor units; a bad spec prints each problem once with its path
 * and a fix ("image is required", did-you-mean), exit 2, and the coordinator's 400 for the same spec says the
 * same; a YAML syntax error is printed once, with its line and column.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cryptoRandom, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';

describe('spec files with gpux job submit', () => {
  let coord: RunningCoordinator;
  let dir: string;
  let buyer: string;
  const specFile = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const submit = async (file: string, ...more: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home') });
    const code = await main(argv('job', 'submit', file, '--coordinator', coord.url, '--token', buyer, ...more), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  const api = async (path: string, body?: unknown) => {
    const res = await fetch(`${coord.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${buyer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: checked field by field
    return { status: res.status, body: (await res.json()) as any };
  };
  const head = 'name: priced\nimage: busybox\ncommand: [echo, hi]\n';

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-cli-spec-'));
    coord = await startCoordinator(loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: false }));
    buyer = (await issueToken(coord.store, { role: 'buyer', name: 'buyer' }, systemClock, cryptoRandom)).token;
  });
  after(async () => {
    await coord?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a decimal price, as a number or as text with its asset, is stored as exact minor units', async () => {
    const cases: Array<[string, number]> = [
      ['maxPricePerGpuHour: 2.5\n', 2_500_000],
      ['maxPricePerGpuHour: "2.5 USDC"\n', 2_500_000],
      ['maxPricePerGpuHour: 0.1\n', 100_000],
      ['maxPricePerGpuHour: 2.0\nasset: credit\n', 2_000_000],
      ['maxPricePerGpuHour: 1.75 credit\nasset: credit\n', 1_750_000],
      ['maxPricePerGpuHour: 2500000\n', 2_500_000],
    ];
    for (const [i, [line, minor]] of cases.entries()) {
      const r = await submit(specFile(`price-${i}.yaml`, head + line), '--json');
      assert.equal(r.code, 0, `${line}: ${r.err}`);
      const id = JSON.parse(r.out).job.id as string;
      const got = await api(`/v1/jobs/${id}`);
      assert.equal(got.body.job.spec.maxPricePerGpuHour, minor, line);
    }
    const json = await submit(specFile('price.json', JSON.stringify({ name: 'j', image: 'busybox', command: ['true'], maxPricePerGpuHour: 2.25 })), '--json');
    assert.equal(json.code, 0, json.err);
    assert.equal((await api(`/v1/jobs/${JSON.parse(json.out).job.id}`)).body.job.spec.maxPricePerGpuHour, 2_250_000, 'JSON numbers are read from their text too');
  });

  test('a price with more decimals than the asset has, or in another asset, is a usage error that says so', async () => {
    const r = await submit(specFile('decimals.yaml', `${head}maxPricePerGpuHour: 2.1234567\n`));
    assert.equal(r.code, 2);
    assert.equal(r.err, `error: spec file ${join(dir, 'decimals.yaml')} is not a valid job spec\n  - maxPricePerGpuHour: "2.1234567" has 7 decimals but USDC has 6: round it to at most 6 decimals\n`);
    const other = await submit(specFile('asset.yaml', `${head}maxPricePerGpuHour: 2.5 CREDIT\n`));
    assert.equal(other.code, 2);
    assert.match(other.err, /- maxPricePerGpuHour: "2\.5 CREDIT" is in CREDIT but the job pays in USDC: set asset: credit, or write the amount in USDC\n$/);
  });

  test('a bad spec: each problem once, with its path and a fix; the coordinator\'s 400 for it says the same', async () => {
    const spec = { name: 'bad', command: ['x'], resources: { gpuz: 1 }, priority: 'hgh', inputs: [{ path: 'a', contnet: 'x' }] };
    const r = await submit(specFile('bad.json', JSON.stringify(spec)));
    assert.equal(r.code, 2);
    assert.equal(r.out, '');
    const expected = [
      'image: image is required — Container image, e.g. "busybox:1.36" or "repo/img@sha256:…"',
      "resources: unknown key 'gpuz' — did you mean 'gpu'?",
      "inputs.0: content is required; unknown key 'contnet' — did you mean 'content'? (one of {path, content}, {path, blob, size} or {path, url, sha256, size})",
      'priority: must be one of high, normal or low, got "hgh" — did you mean high?',
    ];
    assert.equal(r.err, `error: spec file ${join(dir, 'bad.json')} is not a valid job spec\n${expected.map((l) => `  - ${l}\n`).join('')}`);

    const raw = await api('/v1/jobs', { spec });
    assert.equal(raw.status, 400);
    assert.equal(raw.body.error.code, 'SPEC_INVALID');
    assert.deepEqual(raw.body.error.problems.map((p: { path: string; message: string }) => `${p.path}: ${p.message}`), expected);

    const decimal = await api('/v1/jobs', { spec: { name: 'j', image: 'busybox', command: ['true'], maxPricePerGpuHour: '2.5 USDC' } });
    assert.equal(decimal.status, 400, 'the API takes minor units; the CLI converts');
    assert.match(decimal.body.error.problems[0].message, /^must be whole minor units \(6 decimals: 2500000 is 2\.5\), got "2\.5 USDC"/);
  });

  test('a YAML syntax error is printed once, with its line and column', async () => {
    const r = await submit(specFile('broken.yaml', 'name: x\nimage: busybox\n  command: [x]\n'));
    assert.equal(r.code, 2);
    assert.equal(r.err, `error: spec file ${join(dir, 'broken.yaml')} is not valid YAML or JSON\n  - line 2, column 8: Nested mappings are not allowed in compact mappings\n`);
    const alias = await submit(specFile('alias.yaml', 'name: x\nimage: *img\ncommand: [x]\n'));
    assert.equal(alias.code, 2);
    assert.equal(alias.err, `error: spec file ${join(dir, 'alias.yaml')} is not valid YAML or JSON\n  - line 2, column 8: Unresolved alias (the anchor must be set before the alias): img\n`);
    const json = await submit(specFile('broken.json', '{"name": "x",, "image": "busybox"}'));
    assert.equal(json.code, 2);
    assert.match(json.err, /^error: spec file .*broken\.json is not valid YAML or JSON\n {2}- line 1, column 14: .+\n$/);
  });
});
