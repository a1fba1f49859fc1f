/**
 * Federation, first slice (issue 15), through the real CLI against two real coordinators (SQLite) on loopback:
 * peered both ways with `gpux region peer add URL --key FINGERPRINT` (the fingerprint `gpux coordinator key show`
 * prints), each sees the other's free GPUs, price index and round trip in `gpux region list`; one stopped, the
 * other shows it unreachable with the error; a peer removed by URL.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import type { ListPeersResponse, PeerView, } from '@gpux/protocol';
import { registerGpuNode, waitFor } from '@gpux/testing';
import { parse as parseYaml } from 'yaml';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';

interface Region {
  name: string;
  dataDir: string;
  coord: RunningCoordinator;
  operator: string;
}

async function startRegion(dir: string, name: string): Promise<Region> {
  const dataDir = join(dir, name);
  const config = loadCoordinatorConfig({}, { dataDir, host: '127.0.0.1', port: 0, logLevel: 'silent', market: false, challenge: 'off', region: name, peerSummaryMs: 150 });
  const coord = await startCoordinator(config);
  return { name, dataDir, coord, operator: coord.bootstrapOperatorToken ?? '' };
}

/** A node with `gpus` H100s registered the way an agent does (signed), so the region's capacity index has it. */
async function registerNode(r: Region, gpus: number): Promise<void> {
  await registerGpuNode(r.coord.url, r.operator, r.name, gpus);
}

describe('gpux region: two coordinators peered both ways', () => {
  let dir: string;
  let west: Region;
  let east: Region;

  const gpux = async (r: Region, ...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home'), GPUX_URL: r.coord.url, GPUX_OPERATOR_TOKEN: r.operator, GPUX_TOKEN: r.operator });
    const code = await main(argv(...args), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  const regions = async (r: Region): Promise<ListPeersResponse> => {
    const res = await gpux(r, 'region', 'list', '-o', 'json');
    assert.equal(res.code, 0, res.err);
    return JSON.parse(res.out) as ListPeersResponse;
  };
  const peerOf = async (r: Region, name: string): Promise<PeerView | undefined> => (await regions(r)).peers.find((p) => p.name === name);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-region-'));
    [west, east] = await Promise.all([startRegion(dir, 'us-west'), startRegion(dir, 'eu-east')]);
    await Promise.all([registerNode(west, 2), registerNode(east, 4)]);
  });
  after(async () => {
    await Promise.all([west?.coord.close(), east?.coord.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  test('peered with the CLI, each sees the other free GPUs, price index and round trip; a stopped one shows unreachable', async () => {
    const fingerprint = async (r: Region) => {
      const shown = await gpux(r, 'coordinator', 'key', 'show', '--data-dir', r.dataDir, '-o', 'json');
      assert.equal(shown.code, 0, shown.err);
      return JSON.parse(shown.out).signingKey as string;
    };
    const [westKey, eastKey] = [await fingerprint(west), await fingerprint(east)];
    const addEast = await gpux(west, 'region', 'peer', 'add', east.coord.url, '--key', eastKey, '--name', 'east');
    assert.equal(addEast.code, 0, addEast.err);
    assert.match(addEast.out, new RegExp(`^added peer peer-\\S+ \\(east\\) at ${east.coord.url}, key ${eastKey}`));
    assert.equal((await gpux(east, 'region', 'peer', 'add', west.coord.url, '--key', westKey, '--name', 'west')).code, 0);

    const seenByWest = await waitFor('west to see east', async () => {
      const p = await peerOf(west, 'east');
      return p?.status === 'ok' && p.summary?.classes.some((c) => c.freeGpus === 4) ? p : undefined;
    });
    const seenByEast = await waitFor('east to see west', async () => {
      const p = await peerOf(east, 'west');
      return p?.status === 'ok' && p.summary?.classes.some((c) => c.freeGpus === 2) ? p : undefined;
    });
    for (const [seen, region, free] of [
      [seenByWest, 'eu-east', 4],
      [seenByEast, 'us-west', 2],
    ] as const) {
      assert.equal(seen.summary?.region, region);
      assert.ok(seen.rttMs !== null && seen.rttMs >= 0, 'the round trip is measured');
      assert.ok(seen.lastSeenAt !== null);
      assert.equal(seen.failures, 0);
      const h100 = seen.summary?.classes.find((c) => c.class === 'nvidia-h100-80gb');
      assert.ok(h100, JSON.stringify(seen.summary));
      assert.equal(h100.freeGpus, free);
      assert.equal(h100.totalGpus, free);
      assert.ok(h100.priceIndex > 0, 'the class index price');
      assert.equal(seen.summary?.queueDepth, 0);
    }
    const self = (await regions(west)).self;
    assert.equal(self.region, 'us-west');
    assert.equal(self.keyFingerprint, westKey);
    assert.equal(self.summary.classes.find((c) => c.class === 'nvidia-h100-80gb')?.freeGpus, 2);

    const table = await gpux(west, 'region', 'list');
    assert.equal(table.code, 0, table.err);
    assert.match(table.out, /^region us-west {2}key [0-9a-f]{64}\n {2}free GPUs: nvidia-h100\S* 2\/2; price index: nvidia-h100\S* \d+\.\d+; queued 0; placement wait p50 -\n/);
    const header = table.out.split('\n')[3] ?? '';
    assert.deepEqual(header.split(/\s{2,}/), ['NAME', 'URL', 'KEY', 'STATUS', 'RTT', 'LAST SEEN', 'FREE GPUS', 'PRICE/GPU-HOUR', 'QUEUED', 'WAIT P50']);
    assert.match(table.out.split('\n')[4] ?? '', new RegExp(`^east\\s+${east.coord.url.replace(/\./g, '\\.')}\\s+${eastKey.slice(0, 16)}…\\s+ok\\s+\\d+ms\\s+.* ago\\s+nvidia-h100\\S* 4/4\\s`));
    const wide = await gpux(west, 'region', 'list', '-o', 'wide');
    assert.match(wide.out.split('\n')[3] ?? '', /^ID\s+NAME\s+REGION\s+URL\s+KEY\s+.*FAILURES\s+SUMMARY AGE$/);
    const yaml = parseYaml((await gpux(west, 'region', 'list', '-o', 'yaml')).out) as ListPeersResponse;
    assert.equal(yaml.peers[0]?.keyFingerprint, eastKey);

    await east.coord.close();
    const down = await waitFor('west to see east unreachable', async () => {
      const p = await peerOf(west, 'east');
      // The first failure may be the connection the closing server cut; the next ones are refused.
      return p?.status === 'unreachable' && p.lastError?.includes('ECONNREFUSED') ? p : undefined;
    });
    assert.match(down.lastError ?? '', new RegExp(`^cannot reach ${east.coord.url.replace(/\./g, '\\.')}: ECONNREFUSED`));
    assert.equal(down.summary?.region, 'eu-east', 'the last summary stays, with its age');
    assert.ok(down.failures >= 1 && down.nextTryAt !== null);
    const shown = await gpux(west, 'region', 'list');
    assert.match(shown.out, /\bunreachable\b/);
    assert.match(shown.out, /\neast: unreachable: cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)\n/);

    const removed = await gpux(west, 'region', 'peer', 'remove', `${east.coord.url}/`);
    assert.equal(removed.code, 0, removed.err);
    assert.match(removed.out, /^removed peer peer-\S+ \(east\)/);
    assert.deepEqual((await regions(west)).peers, []);
    const unknown = await gpux(west, 'region', 'peer', 'remove', 'http://nowhere.example');
    assert.equal(unknown.code, 2);
    assert.match(unknown.err, /no peer with the id or URL "http:\/\/nowhere\.example"/);
  });
});
