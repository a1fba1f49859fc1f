/**
 * `gpux node list` PROVEN/SCORE/TIER columns, `gpux node get`'s proof and tier lines (issue 12), and
 * `gpux node tier set` through main() against a real coordinator.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { NodeAdvertisement, type NodeProofView, type NodeView } from '@gpux/protocol';
import { formatNode, nodeColumns, proofLine } from '../src/commands/node.js';
import { main } from '../src/main.js';
import { formatTable } from '../src/output.js';
import { argv, captureIo } from './helpers.js';

const AT = 1_700_000_000_000;

const ad = NodeAdvertisement.parse({
  hostname: 'box.local',
  agentVersion: '0.1.0',
  os: 'linux',
  arch: 'x64',
  cpuCores: 16,
  memoryMb: 65536,
  gpus: [],
  docker: { available: false },
  executors: ['process'],
});

function view(id: string, proof: NodeProofView | undefined, tier: NodeView['tier'] = 'open'): NodeView {
  return {
    id,
    status: 'online',
    adminState: 'active',
    adminReason: null,
    drained: false,
    simulated: false,
    advertisement: ad,
    gpusTotal: 0,
    gpusBusy: 0,
    activeAttempts: 0,
    providerId: null,
    registeredAt: AT,
    lastHeartbeatAt: AT,
    reputation: null,
    ...(proof ? { proof } : {}),
    ...(tier ? { tier } : {}),
  };
}

const proof = (over: Partial<NodeProofView>): NodeProofView => ({ state: 'proven', provenClass: 'nvidia-h100-80gb', score: 1.234, provenAt: AT, reason: null, nextCheckAt: AT + 3_600_000, ...over });

describe('proof and tier in node output', () => {
  test('node list: PROVEN shows the class or the state, SCORE only while proven, TIER', () => {
    const rows = [
      view('node-proven', proof({}), 'curated'),
      view('node-failed', proof({ state: 'failed', provenClass: null, score: null, reason: 'too slow for nvidia-h100-80gb' })),
      view('node-old', undefined, undefined),
    ];
    const [head, a, b, c] = formatTable(rows, nodeColumns(AT)).split('\n');
    assert.match(head ?? '', /\bPROVEN\b +SCORE\b +TIER\b/);
    assert.match(a ?? '', /nvidia-h100-80gb +1\.23× +curated/);
    assert.match(b ?? '', /failed +- +open/);
    assert.match(c ?? '', /node-old .* - +- +- /);
  });

  test('node get: the proof line says what was proven (TRUST.md wording) or why dispatch is blocked', () => {
    assert.match(formatNode(view('n', proof({}))), /^proof: +proved a GPU of class nvidia-h100-80gb at .+ \(timed, checked computation\), score 1\.23× the class table; next check by /m);
    assert.match(formatNode(view('n', proof({}), 'curated')), /^tier: +curated \(an operator vouches for it: gpux node tier set\)$/m);
    const failed = proofLine(view('n', proof({ state: 'failed', provenClass: null, score: null, reason: 'challenge timed out' })));
    assert.match(failed, /^failed: challenge timed out; dispatch blocked until a challenge passes \(no stake is slashed\)/);
    assert.match(proofLine(view('n', proof({ state: 'skipped', provenClass: null, score: null }))), /GPUX_CHALLENGE=off/);
    assert.match(proofLine(view('n', proof({ state: 'challenging', provenClass: null, score: null, provenAt: null }))), /takes no market job until it passes/);
    assert.match(proofLine(view('n', undefined)), /^none: the node has never been challenged/);
    assert.doesNotMatch(formatNode(view('n', proof({}))), /attested/, 'never claims hardware is attested');
  });
});

describe('gpux node tier set', () => {
  let coord: RunningCoordinator;
  let dir: string;
  let operator: string;
  const run = async (...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home') });
    const code = await main(argv(...args, '--coordinator', coord.url, '--token', operator), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-cli-tier-'));
    coord = await startCoordinator(loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: false }));
    operator = coord.bootstrapOperatorToken ?? '';
    await coord.store.registerNode({ id: 'node-cli-tier', publicKey: 'key', advertisement: ad, now: Date.now() });
  });
  after(async () => {
    await coord?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('curated, then open; attested is refused with the reason; a bad word fails before any request', async () => {
    const curated = await run('node', 'tier', 'set', 'node-cli-tier', 'curated');
    assert.equal(curated.code, 0, curated.err);
    assert.equal(curated.out, 'node node-cli-tier is now curated (an operator vouches for it: gpux node tier set)\n');
    const got = await run('node', 'get', 'node-cli-tier');
    assert.match(got.out, /^tier: +curated/m);
    assert.match(got.out, /^proof: +/m);
    const list = await run('node', 'list');
    assert.match(list.out, /\bPROVEN\b/);
    const back = await run('node', 'tier', 'set', 'node-cli-tier', 'open', '--json');
    assert.equal(JSON.parse(back.out).node.tier, 'open');
    const attested = await run('node', 'tier', 'set', 'node-cli-tier', 'attested');
    assert.notEqual(attested.code, 0);
    assert.match(attested.err, /only hardware TEE evidence/);
    const bad = await run('node', 'tier', 'set', 'node-cli-tier', 'gold');
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /TIER must be curated or open/);
  });
});
