/**
 * Inter-region clearing (issue 15) through the real CLI against two real coordinators (SQLite, market on) on
 * loopback, peered both ways: `gpux region balance` before any job shows the peer with a zero balance and says no
 * clearing happened yet; a job the home region forwards (it names the peer's region, and the home has no nodes) runs
 * on the peer's node, and then the home owes the peer the bill (+B), the peer is owed it (−B), the pair nets to zero
 * and each side counts the job (sent here, received there) with none open. Operator-only: a buyer gets 403.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RunningAgent, } from '@gpux/agent';
import { cryptoRandom, issueToken, } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { type ClearingBalanceView, formatAmount, RegionBalanceResponse } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { waitFor } from '@gpux/testing';
import { parse as parseYaml } from 'yaml';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';
import { type Region, startNode, startRegion, USDC } from './regions-helpers.js';

describe('gpux region balance: two coordinators peered both ways', () => {
  let dir: string;
  let west: Region;
  let east: Region;
  let agent: RunningAgent | undefined;
  let buyerToken: string;

  const gpux = async (r: Region, token: string, ...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home'), GPUX_URL: r.coord.url, GPUX_OPERATOR_TOKEN: token, GPUX_TOKEN: token });
    const code = await main(argv(...args), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  const balance = async (r: Region): Promise<RegionBalanceResponse> => {
    const res = await gpux(r, r.operatorToken, 'region', 'balance', '-o', 'json');
    assert.equal(res.code, 0, res.err);
    return RegionBalanceResponse.parse(JSON.parse(res.out));
  };
  const rowOf = async (r: Region, peer: string): Promise<ClearingBalanceView | undefined> => (await balance(r)).balances.find((b) => b.peer === peer);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-region-balance-'));
    [west, east] = await Promise.all([startRegion(dir, 'us-west', { marketEpochMs: 3_600_000 }), startRegion(dir, 'eu-east', { marketEpochMs: 3_600_000 })]);
    agent = await startNode(east, dir);
    const [westSelf, eastSelf] = await Promise.all([west.operator.regionPeers(), east.operator.regionPeers()]);
    assert.equal((await gpux(west, west.operatorToken, 'region', 'peer', 'add', east.coord.url, '--key', eastSelf.self.keyFingerprint, '--name', 'east')).code, 0);
    assert.equal((await gpux(east, east.operatorToken, 'region', 'peer', 'add', west.coord.url, '--key', westSelf.self.keyFingerprint, '--name', 'west')).code, 0);
    await waitFor('each region to see the other ok', async () => {
      const [w, e] = await Promise.all([west.operator.regionPeers(), east.operator.regionPeers()]);
      return w.peers[0]?.status === 'ok' && e.peers[0]?.status === 'ok' && w.peers[0].summary?.classes.some((c) => c.freeGpus === 1) ? true : undefined;
    });
    const buyer = await issueToken(west.coord.store, { role: 'buyer', name: 'ada' }, systemClock, cryptoRandom);
    buyerToken = buyer.token;
    await new GpuxClient({ url: west.coord.url, token: buyerToken }).deposit({ asset: 'usdc', amount: 100 * USDC });
  });
  after(async () => {
    await agent?.stop();
    await Promise.all([west?.coord.close(), east?.coord.close()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('before any job: the peer with a zero balance, its credit line, no jobs; -o json, yaml and wide', async () => {
    const res = await balance(west);
    assert.equal(res.region, 'us-west');
    const peerId = (await west.operator.regionPeers()).peers[0]?.id;
    assert.deepEqual(res.balances, [{ peerId, peer: 'east', region: 'eu-east', asset: 'usdc', balance: 0, creditLimit: 1_000_000_000, jobsSent: 0, jobsReceived: 0, open: 0 }]);

    const table = await gpux(west, west.operatorToken, 'region', 'balance');
    assert.equal(table.code, 0, table.err);
    const lines = table.out.split('\n');
    assert.equal(lines[0], 'region us-west: clearing with each peer');
    assert.deepEqual(lines[2]?.split(/\s{2,}/), ['PEER', 'REGION', 'ASSET', 'BALANCE', 'CREDIT LIMIT', 'SENT', 'RECEIVED', 'OPEN']);
    assert.match(lines[3] ?? '', /^east\s+eu-east\s+USDC\s+0\.000000\s+1000\.000000\s+0\s+0\s+0$/);
    assert.match(table.out, /\npositive: this region owes the peer \(it ran jobs for this region\); negative: the peer owes this region \(this region ran jobs for it\)\.\n/);
    assert.match(table.out, /\nEach balance nets to zero with the peer's own balance once open jobs end\.\nno clearing yet: no job has been forwarded either way\n$/);

    const yaml = await gpux(west, west.operatorToken, 'region', 'balance', '-o', 'yaml');
    assert.deepEqual(parseYaml(yaml.out), res);
    const wide = await gpux(west, west.operatorToken, 'region', 'balance', '-o', 'wide');
    assert.deepEqual(wide.out.split('\n')[2]?.split(/\s{2,}/), ['PEER ID', 'PEER', 'REGION', 'ASSET', 'BALANCE', 'CREDIT LIMIT', 'CREDIT LEFT', 'SENT', 'RECEIVED', 'OPEN']);
    assert.match(wide.out.split('\n')[3] ?? '', new RegExp(`^${peerId}\\s+east\\s`));
  });

  test('operators only: a buyer token gets 403, from the CLI and the API', async () => {
    const cli = await gpux(west, buyerToken, 'region', 'balance');
    assert.equal(cli.code, 1, cli.err);
    assert.match(cli.err, /operator token/);
    const res = await fetch(`${west.coord.url}/v1/federation/balance`, { headers: { authorization: `Bearer ${buyerToken}` } });
    assert.equal(res.status, 403);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'FORBIDDEN');
    assert.equal((await fetch(`${west.coord.url}/v1/federation/balance`)).status, 401);
  });

  test('after a forwarded job: the home owes the peer its bill, the peer is owed it, the pair nets to zero, none open', async () => {
    const buyer = new GpuxClient({ url: west.coord.url, token: buyerToken });
    const { job } = await buyer.submitJob({
      name: 'forwarded',
      image: 'busybox',
      command: ['train'],
      env: { GPUX_SIM_SECONDS: '2' },
      resources: { gpu: { count: 1 } },
      constraints: { region: 'eu-east' },
      maxPricePerGpuHour: 20 * USDC,
      timeoutSeconds: 60,
    });
    const done = await waitFor('the forwarded job to end at home', async () => {
      const j = (await buyer.getJob(job.id)).job;
      return ['succeeded', 'failed', 'cancelled'].includes(j.state) ? j : undefined;
    }, 60_000);
    assert.equal(done.state, 'succeeded', JSON.stringify(done));

    const [home, peer] = await waitFor('both sides to book the bill with nothing open', async () => {
      const [w, e] = await Promise.all([rowOf(west, 'east'), rowOf(east, 'west')]);
      return w && e && w.open === 0 && e.open === 0 && w.balance !== 0 ? ([w, e] as const) : undefined;
    });
    assert.ok(home.balance > 0, `the home owes the peer: ${home.balance}`);
    assert.equal(home.balance + peer.balance, 0, 'the pair nets to zero');
    const bill = await buyer.jobBill(job.id);
    assert.equal(bill.charged, home.balance, "the buyer paid the peer's bill, which the home now owes the peer");
    assert.equal(bill.inEscrow, 0);
    assert.deepEqual([home.asset, home.jobsSent, home.jobsReceived], ['usdc', 1, 0]);
    assert.deepEqual([peer.asset, peer.jobsSent, peer.jobsReceived], ['usdc', 0, 1]);
    assert.equal(peer.region, 'us-west');
    assert.equal((await balance(west)).balances.length, 1, 'one row per peer and asset: the zero row gave way to the booked one');

    const table = await gpux(east, east.operatorToken, 'region', 'balance');
    assert.match(table.out.split('\n')[3] ?? '', new RegExp(`^west\\s+us-west\\s+USDC\\s+${formatAmount(peer.balance, 'usdc', { symbol: false }).replace('.', '\\.')}\\s+1000\\.000000\\s+0\\s+1\\s+0$`));
    assert.match(table.out, /once open jobs end \(none open now\)\.\n$/);
  });
});
