/**
 * The dashboard in real headless Chromium against a running market network with a process node and simulated
 * nodes: every page renders the API's data, a submitted job turns succeeded live, buyers see only their own jobs,
 * prices, treasury, bills and wallets show the API's exact amounts, the keyboard reaches the navigation, 375 px
 * has no horizontal scroll. Screenshots go to test/artifacts/.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type {
  BillResponse,
  GetJobResponse,
  GetNodeResponse,
  LedgerResponse,
  ListJobsResponse,
  ListNodesResponse,
  MarketPricesResponse,
  PriceHistoryResponse,
  StakeResponse,
  StatsResponse,
  TreasuryResponse,
  WalletResponse,
} from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { amount, bps, money, num, signedBps } from '../app/lib/format.js';
import { launchChromium, requireChromium, signedInPage } from './helpers/browser.js';
import { ensureBuilt } from './helpers/build.js';
import { BUYER_FUNDS, LOCAL_LABEL, type Network, startNetwork, until } from './helpers/network.js';
import { startWorkload, type Workload } from './helpers/workload.js';

const ARTIFACTS = new URL('./artifacts/', import.meta.url).pathname;
/** Set to a path (e.g. docs/dashboard-overview.png) to also write the overview screenshot there, for the README. */
const README_SHOT = process.env.GPUX_DASHBOARD_SCREENSHOT;

describe('dashboard in Chromium', requireChromium(), () => {
  let net: Network;
  let browser: Browser;
  let workload: Workload;
  let overview: Page;
  const contexts: BrowserContext[] = [];

  const get = async <T>(path: string, token: string): Promise<T> => {
    const res = await fetch(`${net.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200, `${path}: ${res.status}`);
    return (await res.json()) as T;
  };
  const shot = (page: Page, name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });

  const signedIn = (token: string, viewport?: { width: number; height: number }): Promise<Page> => signedInPage(browser, contexts, net.url, token, viewport);

  before(async () => {
    const t0 = Date.now();
    const built = ensureBuilt();
    if (built) console.log(`# built the dashboard in ${built} ms`);
    mkdirSync(ARTIFACTS, { recursive: true });
    net = await startNetwork({ simulated: { 'eu-west': 4, 'us-east': 3 } });
    workload = startWorkload(net.url, await net.buyer('workload'), { initial: 10, everyMs: 2000, max: 100 });
    browser = await launchChromium();
    console.log(`# network and browser up in ${Date.now() - t0} ms`);
  });

  after(async () => {
    const t0 = Date.now();
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close().catch(() => {});
    await workload?.stop();
    await net?.close();
    console.log(`# stopped in ${Date.now() - t0} ms`);
  });

  test('first load on loopback, sign-in, and the overview shows the API’s numbers', async (t) => {
    const ctx = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    contexts.push(ctx);
    overview = await ctx.newPage();
    const t0 = Date.now();
    await overview.goto(`${net.url}/`);
    await overview.getByLabel('API token').waitFor();
    const signInMs = Date.now() - t0;
    const nav = JSON.parse(await overview.evaluate<string>('JSON.stringify(performance.getEntriesByType("navigation")[0])')) as { loadEventEnd: number; domContentLoadedEventEnd: number };
    await shot(overview, 'sign-in');

    await overview.getByLabel('API token').fill(net.operatorToken);
    await overview.getByRole('button', { name: 'Sign in' }).click();
    const stats = await get<StatsResponse>('/v1/stats', net.operatorToken);
    await until('the overview shows the nodes online', async () => ((await overview.getByTestId('nodes-online').textContent()) === String(stats.nodes.online) ? true : undefined));
    assert.equal(stats.nodes.online, 8, 'one process node and seven simulated ones');

    // A signed-in cold load of the overview with its data: a new page of a new context, token already in the tab.
    const ctx2 = await browser.newContext();
    contexts.push(ctx2);
    const cold = await ctx2.newPage();
    await cold.goto(`${net.url}/healthz`);
    await cold.evaluate(`sessionStorage.setItem('gpux.token', ${JSON.stringify(net.operatorToken)})`);
    const t1 = Date.now();
    await cold.goto(`${net.url}/`);
    await cold.getByTestId('nodes-online').waitFor();
    const overviewMs = Date.now() - t1;
    t.diagnostic(`first load on loopback: sign-in form visible in ${signInMs} ms (load event ${Math.round(nav.loadEventEnd)} ms); signed-in overview with data in ${overviewMs} ms`);
    console.log(`# first load: sign-in ${signInMs} ms (load event ${Math.round(nav.loadEventEnd)} ms), overview with data ${overviewMs} ms`);

    // Every GPU class of the API is a row, with the API's totals.
    const classes = overview.getByTestId('gpu-classes');
    for (const c of stats.gpus.byClass) await classes.getByRole('rowheader', { name: new RegExp(c.class.replace(/[()]/g, '\\$&')) }).waitFor();
    const rows = await classes.locator('tbody tr').count();
    assert.equal(rows, stats.gpus.byClass.length);
    // GPUs in use and the state counts follow the API (both move: compare until a reading agrees).
    await until('GPUs in use match /v1/stats', async () => {
      const s = await get<StatsResponse>('/v1/stats', net.operatorToken);
      const ui = await overview.getByTestId('gpus-busy').textContent();
      return ui === String(s.gpus.busy) && s.gpus.busy > 0 ? true : undefined;
    });
    await until('queued count matches', async () => {
      const s = await get<StatsResponse>('/v1/stats', net.operatorToken);
      const ui = await overview.locator('[data-testid=jobs-by-state] .count[data-state=queued]').textContent();
      return ui === String(s.jobs.byState.queued) ? true : undefined;
    });
    await overview.getByTestId('price-summary').locator('tbody tr').first().waitFor();
    await shot(overview, 'overview-operator-first');
  });

  test('nodes: the table lists every node, filters narrow it, a node page shows its hardware', async () => {
    const page = await signedIn(net.operatorToken);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Nodes' }).click();
    const { nodes } = await get<ListNodesResponse>('/v1/nodes', net.operatorToken);
    const table = page.getByTestId('nodes-table');
    await until('all nodes listed', async () => ((await table.locator('tbody tr').count()) === nodes.length ? true : undefined));
    for (const n of nodes) assert.equal(await table.locator(`tr[data-node-id="${n.id}"]`).count(), 1, n.id);
    // The Proven column: the class proven, or the proof's state.
    const firstId = nodes[0]?.id ?? '';
    await until('the proven column shows the API’s proof', async () => {
      const p = (await get<GetNodeResponse>(`/v1/nodes/${firstId}`, net.operatorToken)).node.proof;
      const want = !p ? '—' : p.state === 'proven' ? (p.provenClass ?? 'proven') : p.state;
      return (await table.locator(`tr[data-node-id="${firstId}"] [data-testid=node-proven]`).textContent())?.startsWith(want) ? true : undefined;
    });

    await page.getByLabel('Kind').selectOption('real');
    await until('only the real node', async () => ((await table.locator('tbody tr').count()) === 1 ? true : undefined));
    assert.equal(await table.locator(`tr[data-node-id="${net.local.nodeId}"]`).count(), 1);
    await page.getByLabel('Kind').selectOption('');
    await page.getByLabel('Region').selectOption('eu-west');
    await until('eu-west nodes', async () => ((await table.locator('tbody tr').count()) === 4 ? true : undefined));
    await page.getByLabel('Region').selectOption('');
    await page.getByLabel('Search').fill(net.local.nodeId.slice(0, 12));
    await until('search by id', async () => ((await table.locator('tbody tr').count()) === 1 ? true : undefined));
    await page.getByLabel('Search').fill('');
    await shot(page, 'nodes');

    // A node with work now, so its recent jobs are not empty (the market places by price: some nodes may idle).
    const sim = await until('a busy simulated node', async () => (await get<ListNodesResponse>('/v1/nodes', net.operatorToken)).nodes.find((n) => n.simulated && n.gpusBusy > 0));
    await table.locator(`tr[data-node-id="${sim.id}"] a`).click();
    await page.getByRole('heading', { level: 1, name: sim.advertisement.hostname }).waitFor();
    await page.getByText(sim.id).first().waitFor();
    await page.getByRole('rowheader', { name: sim.advertisement.gpus[0]!.model }).first().waitFor();
    // Earnings and its provider's asks come from GET /v1/provider/status (issue 16): no placeholder left.
    await page.getByRole('region', { name: 'Earnings and asks' }).getByTestId('node-paid').waitFor();
    // The proof of hardware is the API's (NodeView.proof): its class and score when proven, else its state and reason.
    await until('the proof panel shows the API’s proof and tier', async () => {
      const { node } = await get<GetNodeResponse>(`/v1/nodes/${sim.id}`, net.operatorToken);
      if (!node.proof) return (await page.getByTestId('proof').textContent())?.includes('never been challenged') ? true : undefined;
      const state = (await page.getByTestId('proof-state').textContent().catch(() => null)) ?? '';
      const tier = (await page.getByTestId('node-tier').textContent().catch(() => null)) ?? '';
      if (!tier.startsWith(node.tier ?? 'open')) return undefined;
      if (node.proof.state !== 'proven') return state.toLowerCase().startsWith(node.proof.state === 'unproven' ? 'not proven' : node.proof.state === 'challenging' ? 'challenge' : node.proof.state) ? true : undefined;
      const cls = await page.getByTestId('proof-class').textContent().catch(() => null);
      const score = await page.getByTestId('proof-score').textContent().catch(() => null);
      return cls === node.proof.provenClass && score === (node.proof.score === null ? null : `${node.proof.score.toFixed(2)}×`) ? true : undefined;
    });
    // Reputation is the API's (NodeView.reputation), or the honest note when the node has no outcome yet.
    await until('the reputation panel shows the API’s score and audit streak', async () => {
      const { node } = await get<GetNodeResponse>(`/v1/nodes/${sim.id}`, net.operatorToken);
      if (!node.reputation) return (await page.getByTestId('reputation').textContent())?.startsWith('No outcomes yet') ? true : undefined;
      const score = await page.getByTestId('reputation-score').textContent().catch(() => null);
      const audits = await page.getByTestId('reputation-audits').textContent().catch(() => null);
      return score === node.reputation.score.toFixed(3) && audits === String(node.reputation.auditsPassed) ? true : undefined;
    });
    const stake = await get<StakeResponse>(`/v1/nodes/${sim.id}/stake`, net.operatorToken);
    assert.equal(await page.getByTestId('stake-bonded').textContent(), money(stake.stake.staked, stake.stake.asset));
    await until('recent jobs on the node', async () => ((await page.getByTestId('node-recent-jobs').locator('li').count()) > 0 ? true : undefined));
    await shot(page, 'node-detail');
  });

  test('a job submitted through the API appears in the jobs table and turns succeeded live', async () => {
    const page = await signedIn(net.buyerToken);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
    await page.getByTestId('jobs-table').waitFor();
    await page.evaluate('window.__noReload = 1');

    const client = new GpuxClient({ url: net.url, token: net.buyerToken });
    const { job } = await client.submitJob({
      name: 'dashboard-live-job',
      image: 'busybox',
      command: ['/bin/sh', '-c', 'echo hello-from-the-dashboard-test; sleep 2; echo finished'],
      constraints: { nodeLabels: { [LOCAL_LABEL]: 'true' } },
    });
    const row = page.locator(`tr[data-job-id="${job.id}"]`);
    await row.waitFor({ timeout: 15_000 });
    const first = await row.locator('.badge').textContent();
    assert.ok(['queued', 'assigned', 'running'].includes(first ?? ''), `first seen as ${first}`);
    await until('the row turns succeeded', async () => ((await row.locator('.badge').textContent()) === 'succeeded' ? true : undefined), 60_000);
    assert.equal(await page.evaluate('window.__noReload'), 1, 'no reload happened');
    await shot(page, 'jobs-buyer');

    await row.getByRole('link', { name: 'dashboard-live-job' }).click();
    await page.getByRole('heading', { level: 1, name: 'dashboard-live-job' }).waitFor();
    const detail = await get<GetJobResponse>(`/v1/jobs/${job.id}`, net.buyerToken);
    const timeline = page.getByTestId('timeline');
    for (const e of detail.events) await timeline.getByText(e.type, { exact: true }).first().waitFor();
    await until('logs shown', async () => ((await page.getByTestId('job-logs').textContent())?.includes('hello-from-the-dashboard-test') ? true : undefined));
    await page.getByTestId('attempts').getByText('succeeded').waitFor();
    const attempt = detail.attempts[0]!;
    assert.ok(attempt.price, 'a market job is priced at placement');
    assert.equal(await page.getByTestId('attempts').locator('[data-field=price]').getAttribute('data-minor'), String(attempt.price.pricePerUnitHour));
    await page.getByTestId('bill').waitFor();
    // The verification label and its summary are the API's (they move as an audit runs: compare until they agree).
    await until('the verification panel shows the API’s label and summary', async () => {
      const v = (await get<GetJobResponse>(`/v1/jobs/${job.id}`, net.buyerToken)).job.verification;
      if (!v) return undefined;
      const panel = page.getByTestId('verification');
      const label = await panel.locator('[data-label]').getAttribute('data-label').catch(() => null);
      const summary = await page.getByTestId('verification-summary').textContent().catch(() => null);
      return label === v.label && summary === v.summary ? true : undefined;
    });
    assert.doesNotMatch((await page.getByTestId('verification').textContent()) ?? '', /^verified/i, 'never a bare "verified"');
    await shot(page, 'job-detail');
  });

  test('a pending job says why it waits (the explain route when the API has it, else an honest note)', async () => {
    const client = new GpuxClient({ url: net.url, token: net.buyerToken });
    const { job } = await client.submitJob({ name: 'too-big-to-place', image: 'x', command: ['run'], resources: { gpu: { count: 64 } } });
    try {
      const page = await signedIn(net.buyerToken);
      await page.goto(`${net.url}/jobs/${job.id}`);
      const why = page.getByRole('region', { name: 'Why it is waiting' });
      await why.waitFor();
      // Issue 17: the predicted run time as the API states it (unknown, or learned from earlier runs).
      const { prediction } = await get<GetJobResponse>(`/v1/jobs/${job.id}`, net.buyerToken);
      assert.ok(prediction, 'a pending job carries a prediction');
      const predicted = (await page.getByTestId('prediction-run').textContent()) ?? '';
      // The count can differ by the runs that ended between the page's read and this one (each refreshes the model).
      if (prediction.runTimeMs) assert.match(predicted, /^About .*, from \d+ /);
      else assert.equal(predicted, 'Unknown yet: no earlier runs to learn from');
      const doc = (await (await fetch(`${net.url}/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
      if (doc.paths['/v1/jobs/{id}/explain']) {
        const explained = await get<{ summary: string; price: string; suggestions: string[] }>(`/v1/jobs/${job.id}/explain`, net.buyerToken);
        await why.getByTestId('explain').getByText(explained.summary).waitFor();
        // The coordinator's own sentences, as `gpux job explain` prints them (issue 16): the price line and each change.
        assert.equal(await why.getByTestId('explain-price').textContent(), `Price: ${explained.price}`);
        assert.ok(explained.suggestions.length > 0, 'a job no node can run gets what to change');
        assert.deepEqual(await why.getByTestId('explain-suggestions').locator('li').allTextContents(), explained.suggestions);
        assert.match(explained.suggestions.join('\n'), /^no online node has 64 GPUs; the most on one node is \d+ .* — lower resources\.gpu\.count to \d+/m);
      } else {
        await why.getByText('Not available yet').waitFor();
      }
      await shot(page, 'job-pending');
    } finally {
      await client.cancelJob(job.id);
    }
  });

  test('a buyer sees only their own jobs and no node pages; an operator sees everyone’s', async () => {
    const other = new GpuxClient({ url: net.url, token: net.otherBuyerToken });
    const { job: theirs } = await other.submitJob({ name: 'someone-elses-job', image: 'busybox', command: ['true'], resources: { gpu: { count: 1 } }, env: { GPUX_SIM_SECONDS: '1' } });
    const mine = await get<ListJobsResponse>('/v1/jobs', net.buyerToken);
    assert.ok(mine.jobs.length >= 1);

    const page = await signedIn(net.buyerToken);
    const nav = page.getByRole('navigation', { name: 'Main' });
    assert.equal(await nav.getByRole('link', { name: 'Nodes' }).count(), 0, 'no Nodes link for buyers');
    await nav.getByRole('link', { name: 'Jobs' }).click();
    const table = page.getByTestId('jobs-table');
    await until('the buyer’s jobs', async () => ((await table.locator('tbody tr').count()) === mine.jobs.length ? true : undefined));
    for (const j of mine.jobs) assert.equal(await table.locator(`tr[data-job-id="${j.id}"]`).count(), 1);
    assert.equal(await table.locator(`tr[data-job-id="${theirs.id}"]`).count(), 0);
    await page.goto(`${net.url}/jobs/${theirs.id}`);
    await page.getByRole('heading', { level: 1, name: 'Job not found' }).waitFor();
    await page.goto(`${net.url}/nodes`);
    await page.getByRole('heading', { level: 1, name: 'Operators only' }).waitFor();

    const op = await signedIn(net.operatorToken);
    await op.goto(`${net.url}/jobs`);
    await op.locator(`tr[data-job-id="${theirs.id}"]`).waitFor();
  });

  test('the keyboard reaches the main navigation and follows a link', async () => {
    const page = await signedIn(net.operatorToken);
    await page.goto(`${net.url}/`);
    await page.getByTestId('nodes-online').waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement.textContent'), 'Skip to content');
    let inNav = false;
    for (let i = 0; i < 6 && !inNav; i++) {
      await page.keyboard.press('Tab');
      inNav = (await page.evaluate('!!document.activeElement.closest("nav[aria-label=Main]")')) as boolean;
    }
    assert.ok(inNav, 'a few Tabs reach the main navigation');
    while ((await page.evaluate('document.activeElement.textContent')) !== 'Jobs') await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${net.url}/jobs`);
    await until('focus on the new heading', async () => ((await page.evaluate('document.activeElement.tagName')) === 'H1' ? true : undefined));
    assert.equal(await page.evaluate('document.activeElement.textContent'), 'Jobs');
  });

  test('375 px wide: every page renders without horizontal scroll', async () => {
    const page = await signedIn(net.buyerToken, { width: 375, height: 812 });
    const op = await signedIn(net.operatorToken, { width: 375, height: 812 });
    const [job] = (await get<ListJobsResponse>('/v1/jobs?limit=1', net.buyerToken)).jobs;
    const node = net.fleets[0]!.nodes[0]!.nodeId;
    const pages: Array<[Page, string, string]> = [
      [op, '/', 'overview'],
      [op, '/nodes', 'nodes'],
      [op, `/nodes/${node}`, 'node-detail'],
      [page, '/jobs', 'jobs'],
      [page, `/jobs/${job!.id}`, 'job-detail'],
      [op, '/market', 'market'],
      [page, '/wallet', 'wallet'],
    ];
    for (const [p, path, name] of pages) {
      await p.goto(`${net.url}${path}`);
      await p.locator('.live', { hasText: 'Live' }).waitFor();
      const [scroll, client] = JSON.parse(await p.evaluate<string>('JSON.stringify([document.documentElement.scrollWidth, document.documentElement.clientWidth])')) as [number, number];
      assert.ok(scroll <= client, `${path}: scrollWidth ${scroll} > ${client}`);
      await shot(p, `mobile-${name}`);
    }
  });

  /** The price table's rows as the page shows them (no named functions inside: the page runs this source as is). */
  async function priceRows(table: Locator) {
    return table.locator('tbody tr').evaluateAll((trs) =>
      trs.map((tr) => {
        const text = Object.fromEntries(Array.from(tr.querySelectorAll('[data-field]') as ArrayLike<typeof tr>).map((c) => [c.getAttribute('data-field'), c.textContent?.trim()]));
        return {
          class: tr.getAttribute('data-class') ?? '',
          epoch: Number(tr.getAttribute('data-epoch')),
          priceMinor: Number(tr.querySelector('[data-field=price]')?.getAttribute('data-minor')),
          floorMinor: Number(tr.querySelector('[data-field=floor]')?.getAttribute('data-minor')),
          price: text.price,
          change: text.change,
          change24h: text.change24h,
          utilization: text.utilization,
          supply: text.supply,
          demand: text.demand,
          floor: text.floor,
        };
      }),
    );
  }

  test('market: the price table and the price history are the API’s, after the index moved', async () => {
    const page = await signedIn(net.operatorToken);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Market' }).click();
    await page.getByRole('heading', { level: 1, name: 'Market' }).waitFor();
    const table = page.getByTestId('price-table');
    // Both sides move every epoch: compare when the page and the API show the same epoch of every class.
    const prices = await until('the price table shows GET /v1/market/prices', async () => {
      const api = await get<MarketPricesResponse>('/v1/market/prices', net.buyerToken);
      if (api.classes.length === 0 || api.classes.some((c) => c.previous === null)) return undefined; // not two epochs yet
      const rows = await priceRows(table);
      if (rows.length !== api.classes.length || api.classes.some((c) => rows.find((r) => r.class === c.class)?.epoch !== c.epoch)) return undefined;
      for (const c of api.classes) {
        const row = rows.find((r) => r.class === c.class)!;
        assert.deepEqual(row, {
          class: c.class,
          epoch: c.epoch,
          priceMinor: c.price,
          floorMinor: c.floor,
          price: amount(c.price),
          change: signedBps(c.changeBps),
          change24h: signedBps(c.change24hBps),
          utilization: bps(c.utilizationBps),
          supply: num(c.supplyUnits),
          demand: num(c.demandUnits),
          floor: amount(c.floor),
        });
      }
      return api;
    });
    assert.equal(prices.market, true);
    assert.ok(prices.classes.some((c) => c.class === 'cpu'), 'the process node prices the cpu class');

    // The history of a GPU class: the chart is drawn, and the latest point it names is the API's point of that epoch.
    const cls = prices.classes.find((c) => c.class !== 'cpu' && c.supplyUnits > 0)!.class;
    const history = page.getByRole('region', { name: 'Price history' });
    await history.getByLabel('Class').selectOption(cls);
    await history.locator('figure.chart svg[role=img]').waitFor({ timeout: 20_000 });
    await until(`the history of ${cls} matches GET /v1/market/history`, async () => {
      const m = /^Epoch (\d+): (\S+) USDC per GPU-hour$/.exec((await history.getByTestId('history-now').textContent()) ?? '');
      if (!m) return undefined;
      const { points } = await get<PriceHistoryResponse>(`/v1/market/history?class=${cls}&limit=5000`, net.buyerToken);
      const point = points.find((p) => p.epoch === Number(m[1]));
      assert.ok(point, `epoch ${m[1]} of ${cls} is in the history`);
      assert.equal(m[2], amount(point.price));
      return true;
    });
    await page.locator('figure.chart svg[role=img]').nth(1).waitFor({ timeout: 20_000 }); // the live supply chart too
    await shot(page, 'market');
  });

  test('market: operators see a balanced treasury and the ledger; buyers see neither', async () => {
    const page = await signedIn(net.operatorToken);
    await page.goto(`${net.url}/market`);
    const treasury = page.getByTestId('treasury');
    await treasury.waitFor();
    const api = await get<TreasuryResponse>('/v1/treasury', net.operatorToken);
    for (const a of api.assets) {
      assert.equal(a.balanced, true, `${a.asset} is balanced`);
      assert.equal(await treasury.locator(`tr[data-asset="${a.asset}"] [data-testid=balanced]`).textContent(), 'Balanced');
    }
    assert.equal(await treasury.getByText('NOT balanced').count(), 0);
    // What was brought in only moves with mints: the page shows the API's amount.
    await until('minted USDC matches', async () => {
      const usdc = (await get<TreasuryResponse>('/v1/treasury', net.operatorToken)).assets.find((a) => a.asset === 'usdc')!;
      const ui = treasury.locator('tr[data-asset="usdc"] [data-field=minted]');
      return (await ui.getAttribute('data-minor')) === String(usdc.minted) && (await ui.textContent()) === amount(usdc.minted) ? true : undefined;
    });
    const newest = await page.getByTestId('ledger').locator('tbody tr').first().getAttribute('data-transfer-id');
    const { transfers } = await get<LedgerResponse>('/v1/ledger?limit=500', net.operatorToken);
    assert.ok(transfers.some((t) => t.id === newest), 'the ledger rows are the API’s transfers');
    await shot(page, 'market-operator');

    const buyer = await signedIn(net.buyerToken);
    await buyer.goto(`${net.url}/market`);
    await buyer.getByTestId('price-table').waitFor();
    await buyer.locator('.live', { hasText: 'Live' }).waitFor();
    assert.equal(await buyer.getByTestId('treasury').count(), 0);
    assert.equal(await buyer.getByRole('region', { name: 'Treasury' }).count(), 0);
    assert.equal(await buyer.getByTestId('ledger').count(), 0);
    assert.equal((await fetch(`${net.url}/v1/treasury`, { headers: { authorization: `Bearer ${net.buyerToken}` } })).status, 403);
  });

  test('a finished paid job shows its bill, each attempt its price, and the wallet what is left', async () => {
    const payer = await net.buyer('bill-buyer');
    const client = new GpuxClient({ url: net.url, token: payer });
    const { job } = await client.submitJob({ name: 'paid-job', image: 'x', command: ['run'], resources: { gpu: { count: 1 } }, env: { GPUX_SIM_SECONDS: '2' }, maxRetries: 0 });
    const bill = await until(
      'the job finished and settled',
      async () => {
        const j = await get<GetJobResponse>(`/v1/jobs/${job.id}`, payer);
        if (j.job.state !== 'succeeded') return undefined;
        const b = await get<BillResponse>(`/v1/jobs/${job.id}/bill`, payer);
        return b.inEscrow === 0 ? b : undefined;
      },
      60_000,
    );
    assert.ok(bill.charged > 0, 'two seconds on a GPU cost something');
    assert.equal(bill.held, bill.charged + bill.refunded);
    assert.equal(bill.charged, bill.toProviders + bill.fee);
    const { attempts } = await get<GetJobResponse>(`/v1/jobs/${job.id}`, payer);

    const page = await signedIn(payer);
    await page.goto(`${net.url}/jobs/${job.id}`);
    const panel = page.getByTestId('bill');
    await panel.waitFor();
    for (const k of ['held', 'charged', 'toProviders', 'fee', 'refunded', 'inEscrow'] as const) {
      const dd = panel.locator(`dd[data-field=${k}]`);
      assert.equal(await dd.getAttribute('data-minor'), String(bill[k]), k);
      assert.equal(await dd.textContent(), money(bill[k], bill.asset), k);
    }
    assert.equal(await panel.locator('dd[data-field=capPerUnitHour]').textContent(), `${money(bill.capPerUnitHour, bill.asset)} per GPU-hour`);
    const lines = await panel.getByTestId('bill-lines').locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-kind'), Number(tr.querySelector('[data-minor]')?.getAttribute('data-minor'))]));
    assert.deepEqual(
      lines,
      bill.lines.map((l) => [l.kind, l.amount]),
    );
    for (const a of attempts) {
      assert.ok(a.price);
      assert.equal(await page.locator(`tr[data-attempt-id="${a.id}"] [data-field=price]`).getAttribute('data-minor'), String(a.price.pricePerUnitHour));
    }
    await shot(page, 'job-bill');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Wallet' }).click();
    const usdc = page.getByTestId('wallet-balances').locator('[data-asset=usdc]');
    await usdc.waitFor();
    const wallet = await get<WalletResponse>('/v1/wallet', payer);
    const available = wallet.balances.find((b) => b.asset === 'usdc')!.available;
    assert.equal(available, BUYER_FUNDS - bill.charged, 'minted funds less what the job was charged');
    assert.equal(await usdc.locator('[data-field=available]').getAttribute('data-minor'), String(available));
    assert.equal(await usdc.locator('[data-field=available]').textContent(), money(available, 'usdc'));
    await page.getByTestId('wallet-history').locator(`tr[data-transfer-id]`).first().waitFor();
    assert.equal(await page.getByTestId('wallet-history').locator('tbody tr').count(), (await client.walletHistory()).entries.length);
    await shot(page, 'wallet');
  });

  test('the overview after a while: sparklines carry history (screenshot for the README)', async () => {
    await until('a minute of readings', async () => ((await overview.locator('.stat polyline.spark-line').count()) >= 4 ? true : undefined));
    await overview.waitForTimeout(4000);
    await overview.screenshot({ path: `${ARTIFACTS}overview.png` });
    if (README_SHOT) copyFileSync(`${ARTIFACTS}overview.png`, resolve(README_SHOT));
  });
});
