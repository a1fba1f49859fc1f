/**
 * CLI conventions (issue 16) through main() against a real coordinator: `-o table|wide|json|yaml` (and `--json`)
 * on every list and get, exit code 2 for every usage error with the valid values named, and `gpux completion`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { GpuxClient } from '@gpux/sdk';
import { requireComponent } from '@gpux/testing';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { bashScript, completionTree, zshScript } from '../src/commands/completion.js';
import { toJson, toYaml } from '../src/output.js';
import { buildProgram, main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';

/** Every command that lists or gets something: each must take -o. */
const READ_COMMANDS = [
  'job list',
  'job get',
  'job bill',
  'job explain',
  'offers',
  'node list',
  'node get',
  'node penalties',
  'node price list',
  'node stake show',
  'wallet balance',
  'wallet history',
  'wallet payouts',
  'market prices',
  'market history',
  'payout list',
  'token list',
  'enrollment list',
  'blob ls',
  'keys show',
  'coordinator key show',
  'region list',
  'region balance',
];

function find(program: Command, path: string): Command {
  let cmd = program;
  for (const name of path.split(' ')) {
    const next = cmd.commands.find((c) => c.name() === name);
    assert.ok(next, `no command ${path}`);
    cmd = next;
  }
  return cmd;
}

describe('CLI conventions', () => {
  let coord: RunningCoordinator;
  let dir: string;
  let operator: string;
  let buyer: string;
  let jobId: string;
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home'), GPUX_URL: coord.url, GPUX_TOKEN: buyer, GPUX_OPERATOR_TOKEN: operator, ...env });
    const code = await main(argv(...args), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-cli-conv-'));
    coord = await startCoordinator(loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: false }));
    operator = coord.bootstrapOperatorToken ?? '';
    buyer = (await new GpuxClient({ url: coord.url, token: operator }).createToken({ role: 'buyer', name: 'ada' })).token;
    const submitted = await new GpuxClient({ url: coord.url, token: buyer }).submitJob({ name: 'conv', image: 'busybox', command: ['true'], resources: { gpu: { count: 0 } }, timeoutSeconds: 60 });
    jobId = submitted.job.id;
  });
  after(async () => {
    await coord?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('every list and get command takes -o table|wide|json|yaml and --json', () => {
    const program = buildProgram(captureIo({}));
    for (const path of READ_COMMANDS) {
      const cmd = find(program, path);
      const o = cmd.options.find((opt) => opt.long === '--output');
      assert.ok(o, `${path} has no -o`);
      assert.equal(o.short, '-o', path);
      assert.deepEqual(o.argChoices, ['table', 'wide', 'json', 'yaml'], path);
      assert.ok(cmd.options.some((opt) => opt.long === '--json'), `${path} lost --json`);
    }
  });

  test('-o yaml prints the same data as -o json, and --json is -o json, on every read command that runs here', async () => {
    assert.equal((await run(['keys', 'create'])).code, 0);
    const cases: string[][] = [
      ['job', 'list'],
      ['job', 'get', jobId],
      ['job', 'bill', jobId],
      ['job', 'explain', jobId],
      ['node', 'list'],
      ['node', 'price', 'list'],
      ['wallet', 'history'],
      ['wallet', 'payouts'],
      ['market', 'prices'],
      ['market', 'history'],
      ['payout', 'list'],
      ['token', 'list'],
      ['enrollment', 'list'],
      ['blob', 'ls'],
      ['keys', 'show'],
      ['coordinator', 'key', 'show', '--data-dir', join(dir, 'coord')],
      ['region', 'balance'],
    ];
    for (const args of cases) {
      const json = await run([...args, '-o', 'json']);
      assert.equal(json.code, 0, `${args.join(' ')}: ${json.err}`);
      const yaml = await run([...args, '-o', 'yaml']);
      assert.equal(yaml.code, 0, `${args.join(' ')}: ${yaml.err}`);
      const alias = await run([...args, '--json']);
      const data = JSON.parse(json.out);
      assert.deepEqual(parseYaml(yaml.out), data, args.join(' '));
      assert.deepEqual(JSON.parse(alias.out), data, `${args.join(' ')} --json`);
      const table = await run(args);
      assert.equal(table.code, 0, `${args.join(' ')}: ${table.err}`);
      // Relative times move between the two runs ("980ms ago", "1.2s ago"), and the column widths with them.
      const same = (out: string) => out.replace(/[\d.]+(ms|s|m|h) ago/g, 'AGO').replace(/ +/g, ' ');
      assert.equal(same((await run([...args, '-o', 'table'])).out), same(table.out), args.join(' '));
    }
  });

  test('-o wide shows more columns than the table', async () => {
    const table = await run(['job', 'list']);
    const wide = await run(['job', 'list', '-o', 'wide']);
    assert.equal(wide.code, 0, wide.err);
    const header = (s: string) => s.split('\n')[0]!.split(/\s{2,}/);
    assert.deepEqual(header(table.out), ['ID', 'NAME', 'STATE', 'GPUS', 'ATTEMPTS', 'EXIT', 'CREATED', 'DURATION', 'VERIFICATION']);
    assert.deepEqual(header(wide.out), [...header(table.out), 'IMAGE', 'PRIORITY', 'NODES', 'KIND', 'BUYER', 'ERROR']);
    assert.match(wide.out.split('\n')[1]!, new RegExp(`^${jobId}\\s.*\\sbusybox\\s+normal\\s+1\\s+buyer\\s`));
  });

  test('a bad -o, or --json with another -o, is a usage error (exit 2) naming the choices, before any request', async () => {
    const bad = await run(['job', 'list', '-o', 'xml'], { GPUX_URL: 'http://127.0.0.1:9' });
    assert.equal(bad.code, 2, bad.err);
    assert.match(bad.err, /argument 'xml' is invalid\. Allowed choices are table, wide, json, yaml/);
    const both = await run(['job', 'list', '--json', '-o', 'yaml'], { GPUX_URL: 'http://127.0.0.1:9' });
    assert.equal(both.code, 2, both.err);
    assert.match(both.err, /^error: --json and -o yaml disagree/);
  });

  test('--state runing exits 2 listing the valid states, with a suggestion; a list is checked item by item', async () => {
    const typo = await run(['job', 'list', '--state', 'runing'], { GPUX_URL: 'http://127.0.0.1:9' });
    assert.equal(typo.code, 2, typo.err);
    assert.match(typo.err, /--state must be one or more of queued, assigned, running, succeeded, failed or cancelled, comma-separated; "runing" is not one \(did you mean running\?\)/);
    const list = await run(['job', 'list', '--state', 'queued,done'], { GPUX_URL: 'http://127.0.0.1:9' });
    assert.equal(list.code, 2);
    assert.match(list.err, /"done" is not one/);
    const ok = await run(['job', 'list', '--state', 'Queued,running', '-o', 'json']);
    assert.equal(ok.code, 0, ok.err);
    assert.deepEqual(
      JSON.parse(ok.out).jobs.map((j: { id: string }) => j.id),
      [jobId],
    );
  });

  test('other usage errors exit 2: bad numbers, bad choices, no coordinator, a value the coordinator refuses as invalid', async () => {
    const cases: Array<[string[], RegExp, Record<string, string>?]> = [
      [['job', 'list', '--limit', '0'], /--limit must be an integer from 1 to 500/],
      [['node', 'list', '--status', 'up'], /--status must be online or offline/],
      [['wallet', 'history', '--asset', 'eur'], /--asset must be usdc or credit/],
      [['job', 'keys', 'serve', jobId, '--interval-ms', 'soon'], /--interval-ms must be an integer from 200 to 3600000/],
      [['job', 'verify', jobId, '--out', join(dir, 'nowhere')], /--out .* is not a directory/],
      [['completion', 'fish'], /value 'fish' is invalid for argument 'shell'\. Allowed choices are bash, zsh/],
      [['job', 'list'], /^error: no coordinator URL/, { GPUX_URL: '' }],
      // The coordinator's own check (a cursor it cannot read): 400 REQUEST_INVALID, still bad usage.
      [['job', 'list', '--cursor', '!!!'], /cursor/i],
    ];
    for (const [args, message, env] of cases) {
      const r = await run(args, env);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
      assert.match(r.err, message, args.join(' '));
    }
  });

  test('GPUX_URL reaches `gpux node start` and the agent config: a bad one is named in the error', async () => {
    const r = await run(['node', 'start', '--enrollment-token', 'gpux_enroll_x', '--executor', 'simulated', '--data-dir', join(dir, 'node')], { GPUX_URL: 'ftp://nowhere' });
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /coordinatorUrl: "ftp:\/\/nowhere" is not a valid http\(s\) URL/);
  });
});

test('-o json and -o yaml keep a node-chosen string from driving the terminal, and still carry the same data', () => {
  const hostile = { hostname: 'x\u001b[31mred', label: '\u009b2J', name: '\u202eexe.txt', labels: { 'k\u009bey': 'v' }, lines: 'a\nb', n: 1 };
  for (const text of [toJson(hostile), toYaml(hostile)]) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for raw control characters is the point
    assert.doesNotMatch(text, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/, text);
  }
  assert.deepEqual(JSON.parse(toJson(hostile)), hostile);
  assert.deepEqual(parseYaml(toYaml(hostile)), hostile);
});

describe('gpux completion', () => {
  const program = buildProgram(captureIo({}));

  /** What bash offers for the words typed so far (the last one is being completed), with the generated script sourced. */
  function bashComplete(script: string, ...words: string[]): string[] {
    const file = join(mkdtempSync(join(tmpdir(), 'gpux-completion-')), 'gpux.bash');
    writeFileSync(file, script);
    try {
      const quoted = ['gpux', ...words].map((w) => `'${w}'`).join(' ');
      const out = execFileSync('bash', ['-c', `source '${file}'; COMP_WORDS=(${quoted}); COMP_CWORD=${words.length}; _gpux; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: 'utf8' });
      return out.split('\n').filter(Boolean).sort();
    } finally {
      rmSync(join(file, '..'), { recursive: true, force: true });
    }
  }

  test('gpux completion bash prints a script; bash completes commands, subcommands, options and option values from it', async () => {
    const io = captureIo({});
    assert.equal(await main(argv('completion', 'bash'), io), 0);
    const script = io.stdout();
    assert.match(script, /complete -o default -F _gpux gpux/);
    assert.deepEqual(bashComplete(script, 'jo'), ['job']);
    assert.deepEqual(bashComplete(script, 'job', 'l'), ['list', 'logs']);
    assert.deepEqual(bashComplete(script, 'job', 'list', '--st'), ['--state']);
    assert.deepEqual(bashComplete(script, 'job', 'list', '-o', ''), ['json', 'table', 'wide', 'yaml']);
    assert.deepEqual(bashComplete(script, '--ca-file', 'ca.pem', 'node', 'pr'), ['price'], 'an option value is skipped');
    assert.deepEqual(bashComplete(script, 'node', 'price', ''), ['list', 'set']);
    assert.ok(bashComplete(script, 'job', 'list', '--').includes('--insecure'), 'global options everywhere');
    assert.deepEqual(bashComplete(script, 'completion', ''), [], 'a leaf command: files, from bash');
  });

  const hasZsh = (() => {
    try {
      execFileSync('zsh', ['-c', 'true']);
      return true;
    } catch {
      return false;
    }
  })();

  test('gpux completion zsh: a valid script whose _gpux offers what the tree has (compsys stubbed to print)', requireComponent('zsh', hasZsh, 'install it (apt-get install zsh) to test the zsh completion script'), async () => {
    const io = captureIo({});
    assert.equal(await main(argv('completion', 'zsh'), io), 0);
    const home = mkdtempSync(join(tmpdir(), 'gpux-zsh-'));
    try {
      writeFileSync(join(home, '_gpux'), io.stdout());
      execFileSync('zsh', ['-n', join(home, '_gpux')]);
      // _describe, compadd and _files print what they were given; the real ones filter by what is typed.
      const driver = `compdef() { :; }\n_describe() { print -l -- "\${(@P)4}" | cut -d: -f1 }\ncompadd() { shift; print -l -- "\${(@P)1}" }\n_files() { print FILES }\nsource ${join(home, '_gpux')}\nwords=(gpux "$@"); CURRENT=$#words; PREFIX="\${words[-1]}"\n_gpux\n`;
      writeFileSync(join(home, 'drive.zsh'), driver);
      const offered = (...words: string[]) => execFileSync('zsh', [join(home, 'drive.zsh'), ...words], { encoding: 'utf8' }).split('\n').filter(Boolean).sort();
      assert.deepEqual(offered('node', 'price', ''), ['list', 'set']);
      assert.deepEqual(offered('--ca-file', 'x', 'node', 'price', ''), ['list', 'set'], 'an option value is skipped');
      assert.deepEqual(offered('job', 'list', '-o', ''), ['json', 'table', 'wide', 'yaml']);
      assert.ok(offered('job', 'list', '--').includes('--state'));
      assert.deepEqual(offered('completion', ''), ['FILES']);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test('the scripts come from the tree: every command and option appears, hidden ones do not', () => {
    const tree = completionTree(program);
    const bash = bashScript(program);
    const zsh = zshScript(program);
    assert.ok(tree.length > 40, `${tree.length} commands`);
    for (const node of tree) {
      for (const s of node.subcommands) {
        assert.ok(bash.includes(s.name), s.name);
        assert.ok(zsh.includes(`'${s.name}:`), `zsh: ${s.name}`);
      }
      for (const o of node.options) for (const n of o.names) assert.ok(zsh.includes(`'${n}:`), `zsh: ${node.path} ${n}`);
    }
    const start = tree.find((n) => n.path === 'node start');
    assert.ok(start && !start.options.some((o) => o.names.includes('--provider-token')), 'a hidden option is not offered');
    assert.match(zsh, /^#compdef gpux\n/);
  });
});
