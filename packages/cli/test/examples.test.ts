/**
 * The examples in examples/ (issue 16): every one is a valid job spec for the real parser and has its line in the
 * README; those that need no GPU run to success on a real `gpux dev` whose node runs them in Docker (its busybox image
 * imported from the host's static busybox, no registry), and their outputs are checked.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { JobSpec } from '@gpux/protocol';
import { requireDocker } from '@gpux/testing';
import type { QuoteJobResponse } from '@gpux/protocol';
import { main } from '../src/main.js';
import { loadSpecWithFiles } from '../src/spec-file.js';
import { type DevNetwork, show, startDevNetwork } from './dev-network.js';
import { argv, captureIo, tempDir } from './helpers.js';
import { type PricedNetwork, startPricedNetwork } from './priced-network.js';

const repoRoot = join(import.meta.dirname, '..', '..', '..');
const examplesDir = join(repoRoot, 'examples');
const exampleFiles = readdirSync(examplesDir).filter((f) => /\.(ya?ml|json)$/.test(f)).sort();

/** An example parsed by the CLI's loader alone (YAML, the protocol's parser, `{path, file}` inputs exist). */
async function parseExample(file: string): Promise<JobSpec> {
  return (await loadSpecWithFiles(join(examplesDir, file))).spec;
}

/** The coordinator the examples are validated on: a market with staked H100 nodes (started by the first suite). */
let priced: PricedNetwork | undefined;

/**
 * The one place an example is checked as a spec: the local parse, then `gpux job submit --dry-run` against a real
 * coordinator, the path a buyer's submit takes (the server's schema, the market cap against the class floors), which
 * must find a node for it.
 */
async function validateExample(file: string): Promise<JobSpec> {
  const spec = await parseExample(file);
  assert.ok(priced, 'the priced network is started');
  const io = captureIo({ GPUX_HOME: '/nonexistent-gpux-home' });
  const code = await main(argv('job', 'submit', '--dry-run', join(examplesDir, file), '--json', ...priced.as()), io);
  assert.equal(code, 0, `gpux job submit --dry-run examples/${file}:\n${io.stderr()}${io.stdout()}`);
  const quote = JSON.parse(io.stdout()) as QuoteJobResponse;
  assert.notEqual(quote.wait.kind, 'never', `no node here could run examples/${file}: ${quote.wait.basis}; ${quote.suggestions.join('; ')}`);
  return spec;
}

/** Runs the buyer's Freivalds check (examples/matmul/freivalds.awk) with the host's awk. */
function freivalds(c: string): { code: number | null; out: string } {
  const dir = join(examplesDir, 'matmul');
  const r = spawnSync('awk', ['-v', 'rounds=40', '-f', join(dir, 'freivalds.awk'), join(dir, 'a.txt'), join(dir, 'b.txt'), c], { encoding: 'utf8' });
  if (r.error) throw new Error(`the Freivalds check needs awk on the host: ${r.error.message}`);
  return { code: r.status, out: r.stdout + r.stderr };
}

/** What each example that runs here must have written (by example file); an example not named only has to succeed. */
const outputChecks: Record<string, (out: string, t: import('node:test').TestContext) => void> = {
  'hello.yaml': (out) => assert.equal(readFileSync(join(out, 'greetings.txt'), 'utf8'), 'hello, Ada\nhello, Grace\nhello, Linus\n'),
  'matmul.yaml': (out, t) => {
    const c = join(out, 'c.txt');
    const ok = freivalds(c);
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /^ok: C = A·B \(32×32\) passed 40 Freivalds rounds/);
    // One wrong entry: each round catches it with probability 1/2, so 40 rounds miss it with probability 2^-40.
    const rows = readFileSync(c, 'utf8').trimEnd().split('\n');
    rows[7] = rows[7]!.replace(/^-?\d+/, (v) => String(Number(v) + 1));
    const wrong = join(tempDir(t), 'c.txt');
    writeFileSync(wrong, `${rows.join('\n')}\n`);
    const caught = freivalds(wrong);
    assert.equal(caught.code, 1, caught.out);
    assert.match(caught.out, /^FAILED: round \d+: row 8 of C·x is -?\d+, of A·\(B·x\) -?\d+: C is not A·B$/m);
  },
};

describe('examples/: valid specs, each with its README line', () => {
  before(async () => {
    // No ask: the examples name no price, so they take the market's, which an ask above the index would refuse.
    priced = await startPricedNetwork(2, null);
  });
  after(async () => {
    await priced?.stop();
  });

  test('the examples the README promises are there', () => {
    for (const name of ['hello', 'matmul', 'pytorch-train', 'batch-inference', 'torchrun-gang']) assert.ok(exampleFiles.includes(`${name}.yaml`), `examples/${name}.yaml is missing`);
  });

  for (const file of exampleFiles) {
    test(`examples/${file} is a valid job spec with a real image`, async () => {
      const spec = await validateExample(file);
      assert.match(spec.image, /^[a-z0-9./-]+:[\w.-]+$/, 'a public image with a tag');
      assert.doesNotMatch(spec.image, /^gpux-test\//, 'never a local test image');
    });
  }

  test('every example has a line in the README (a new example without one fails here)', () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const missing = exampleFiles.filter((f) => !readme.includes(`examples/${f}`));
    assert.deepEqual(missing, [], `add a line for ${missing.map((f) => `examples/${f}`).join(', ')} to the README's "Examples"`);
  });

  test('the gang example starts torchrun from the gang variables gpux sets', async () => {
    const spec = await validateExample('torchrun-gang.yaml');
    assert.equal(spec.nodes, 2);
    const script = spec.args.join(' ');
    for (const v of ['GPUX_WORLD_SIZE', 'GPUX_RANK', 'GPUX_MASTER_ADDR']) assert.match(script, new RegExp(`\\$${v}\\b`));
    assert.match(readFileSync(join(examplesDir, 'torchrun-gang', 'ddp.py'), 'utf8'), /GPUX_PEERS/);
  });
});

/** Examples a CPU-only network can run (one that fails to parse is kept, so its run fails loudly). */
const cpuExamples: string[] = [];
for (const file of exampleFiles) {
  const spec = await parseExample(file).catch(() => null);
  if (!spec || (spec.resources.gpu.count === 0 && (spec.nodes ?? 1) === 1)) cpuExamples.push(file);
}

describe('examples/ that need no GPU run on a real Docker engine', requireDocker(), () => {
  let net: DevNetwork;
  before(async () => {
    net = await startDevNetwork();
  });
  after(async () => {
    await net?.stop();
  });

  // The GPU and gang examples are validated above; this machine has no GPU to run them on.
  for (const file of cpuExamples) {
    test(`examples/${file}`, async (t) => {
      const submit = await net.gpux(['job', 'submit', join(examplesDir, file), '--wait', '--json']);
      assert.equal(submit.code, 0, show(submit));
      const { job } = JSON.parse(submit.stdout);
      assert.equal(job.state, 'succeeded', show(submit));
      const out = join(tempDir(t), 'out');
      const result = await net.gpux(['job', 'result', job.id, '--out', out]);
      assert.equal(result.code, 0, show(result));
      outputChecks[file]?.(out, t);
    });
  }
});
