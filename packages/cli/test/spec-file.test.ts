/** Spec files: YAML and JSON load alike; invalid ones list every problem with its path and exit 2. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { CliError, EXIT_USAGE } from '../src/errors.js';
import { main } from '../src/main.js';
import { loadSpecFile, parseSpecText } from '../src/spec-file.js';
import { argv, captureIo, tempDir } from './helpers.js';

const repoRoot = join(import.meta.dirname, '..', '..', '..');

describe('spec files', () => {
  test('examples/hello.yaml is a valid CPU-only spec with an input', async () => {
    const spec = await loadSpecFile(join(repoRoot, 'examples', 'hello.yaml'));
    assert.equal(spec.image.startsWith('busybox'), true);
    assert.equal(spec.resources.gpu.count, 0);
    assert.equal(spec.inputs.length, 1);
    assert.match(spec.args.join(' '), /GPUX_OUTPUTS/);
  });

  test('YAML and JSON give the same normalized spec', async (t) => {
    const dir = tempDir(t);
    writeFileSync(join(dir, 'a.yaml'), 'name: a\nimage: busybox\ncommand: [echo, hi]\n');
    writeFileSync(join(dir, 'a.json'), JSON.stringify({ name: 'a', image: 'busybox', command: ['echo', 'hi'] }));
    const fromYaml = await loadSpecFile(join(dir, 'a.yaml'));
    assert.deepEqual(await loadSpecFile(join(dir, 'a.json')), fromYaml);
    assert.equal(fromYaml.timeoutSeconds, 3600, 'schema defaults are applied');
  });

  test('- reads stdin', async () => {
    const spec = await loadSpecFile('-', async () => '{"name":"s","image":"i","command":["c"]}');
    assert.equal(spec.name, 's');
  });

  test('an invalid spec is a usage error listing each problem path', () => {
    const text = 'name: x\nimage: ""\ncommand: []\nresources: { gpu: { count: 99 } }\ninputs: [{ path: ../etc/passwd, content: x }]\nbogus: 1\n';
    const err = (() => {
      try {
        parseSpecText(text, 'spec file bad.yaml');
      } catch (e) {
        return e;
      }
    })();
    assert.ok(err instanceof CliError);
    assert.equal(err.exitCode, EXIT_USAGE);
    assert.equal(err.message, 'spec file bad.yaml is not a valid job spec');
    const paths = err.problems.map((p) => p.path);
    for (const p of ['image', 'command', 'resources.gpu.count', 'inputs.0.path', '(root)']) assert.ok(paths.includes(p), `${p} in ${paths.join(', ')}`);
  });

  test('broken YAML reports a line and column', () => {
    assert.throws(
      () => parseSpecText('name: [unclosed\n', 'x'),
      (e: unknown) => e instanceof CliError && e.exitCode === EXIT_USAGE && /^line \d+, column \d+$/.test(e.problems[0]?.path ?? ''),
    );
    assert.throws(() => parseSpecText('', 'x'), /is empty/);
  });

  test('`gpux job submit bad.yaml` prints the problems and exits 2 before sending anything', async (t) => {
    const dir = tempDir(t);
    writeFileSync(join(dir, 'bad.yaml'), 'name: x\nimage: busybox\ncommand: [echo]\ntimeoutSeconds: -5\n');
    // The URL is unreachable: reaching the network would turn exit 2 into a connection error (exit 1).
    const io = captureIo({ GPUX_HOME: dir, GPUX_URL: 'http://127.0.0.1:9', GPUX_TOKEN: 't' });
    const code = await main(argv('job', 'submit', join(dir, 'bad.yaml')), io);
    assert.equal(code, 2);
    assert.equal(io.stdout(), '');
    assert.match(io.stderr(), /^error: spec file .*bad\.yaml is not a valid job spec\n {2}- timeoutSeconds: .+\n$/);

    const missing = captureIo({ GPUX_HOME: dir });
    assert.equal(await main(argv('job', 'submit', join(dir, 'nope.yaml')), missing), 2);
    assert.match(missing.stderr(), /does not exist/);
  });
});
