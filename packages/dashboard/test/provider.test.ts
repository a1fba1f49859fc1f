/**
 * The provider's side of the dashboard in Chromium (issue 16): the Provider page shows the account's nodes with
 * their stake, its asks and its earnings as the API reports them; an operator's node page shows the real stake,
 * the node's pay and its provider's asks; a buyer on an operator-only page is told so at once (no endless "Connecting…").
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ProviderStatusResponse } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { amount, money } from '../app/lib/format.js';
import { launchChromium, requireChromium, signedInPage } from './helpers/browser.js';
import { ensureBuilt } from './helpers/build.js';
import { type Network, STAKE_PER_NODE, startNetwork, until } from './helpers/network.js';

const ASK_CLASS = 'cpu';
const ASK = 250_000; // 0.25 per job-hour

describe('the provider side in Chromium', requireChromium(), () => {
  let net: Network;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  const status = async (token: string, accountId?: string): Promise<ProviderStatusResponse> =>
    new GpuxClient({ url: net.url, token }).providerStatus(accountId ? { accountId } : {});

  const signedIn = (token: string, viewport?: { width: number; height: number }): Promise<Page> => signedInPage(browser, contexts, net.url, token, viewport);

  before(async () => {
    ensureBuilt();
    net = await startNetwork({ simulated: { 'eu-west': 2 } });
    await new GpuxClient({ url: net.url, token: net.providerToken }).setAsk(ASK_CLASS, ASK);
    browser = await launchChromium();
  });

  after(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close().catch(() => {});
    await net?.close();
  });

  test('the Provider page: every node with its stake, the asks and the earnings, as the API reports them', async () => {
    const api = await status(net.providerToken);
    assert.equal(api.nodes.length, 3, 'the process node and two simulated ones');
    const page = await signedIn(net.providerToken);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Provider' }).click();
    await page.getByRole('heading', { level: 1, name: 'Provider' }).waitFor();
    const table = page.getByTestId('provider-nodes');
    await until('every node listed', async () => ((await table.locator('tbody tr').count()) === api.nodes.length ? true : undefined));
    for (const { node, stake } of api.nodes) {
      const row = table.locator(`tr[data-node-id="${node.id}"]`);
      assert.equal(Number(await row.locator('[data-field=stake-free]').getAttribute('data-minor')) + Number(await row.locator('[data-field=stake-locked]').getAttribute('data-minor')), stake.staked);
      assert.equal(stake.staked, STAKE_PER_NODE);
    }
    const ask = page.getByTestId('asks-table').locator(`tr[data-class="${ASK_CLASS}"]`);
    assert.equal(await ask.locator('td').first().textContent(), amount(ASK));
    const usdc = page.getByTestId('provider-earnings').locator('[data-asset=usdc]');
    const apiUsdc = api.earnings.find((e) => e.asset === 'usdc');
    assert.ok(apiUsdc);
    await until('the wallet figure', async () => ((await usdc.locator('[data-field=available]').textContent()) === money((await status(net.providerToken)).earnings.find((e) => e.asset === 'usdc')?.available ?? -1, 'usdc') ? true : undefined));
    assert.match((await usdc.locator('[data-field=paid]').textContent()) ?? '', /USDC/);
  });

  test('a buyer with no nodes is told how to add one', async () => {
    const page = await signedIn(net.buyerToken);
    await page.goto(`${net.url}/provider`);
    await page.getByTestId('provider-no-nodes').getByText('gpux enrollment create').waitFor();
    await page.getByTestId('asks-none').waitFor();
  });

  test('a buyer on an operator-only page is told it is for operators, and nothing pretends to connect', async () => {
    const page = await signedIn(net.buyerToken);
    for (const path of ['/nodes', `/nodes/${net.local.nodeId}`]) {
      await page.goto(`${net.url}${path}`);
      await page.getByRole('heading', { level: 1, name: 'Operators only' }).waitFor();
      assert.match((await page.getByTestId('operators-only').textContent()) ?? '', /is for operators of this coordinator/);
      assert.equal(await page.getByText('Connecting…').count(), 0, `${path}: no endless "Connecting…"`);
    }
    await page.getByRole('main').getByRole('link', { name: 'Provider' }).click();
    await page.getByRole('heading', { level: 1, name: 'Provider' }).waitFor();
  });

  test("an operator's node page: the real stake, what the node earned and its provider's asks", async () => {
    const nodeId = net.local.nodeId;
    const stake = await new GpuxClient({ url: net.url, token: net.operatorToken }).nodeStake(nodeId);
    const page = await signedIn(net.operatorToken);
    await page.goto(`${net.url}/nodes/${nodeId}`);
    await page.getByTestId('stake-bonded').waitFor();
    assert.equal(await page.getByTestId('stake-bonded').textContent(), money(stake.stake.staked, 'usdc'));
    const section = page.getByRole('region', { name: 'Earnings and asks' });
    await section.getByTestId('node-paid').waitFor();
    const providerId = (await status(net.providerToken)).accountId;
    const api = await status(net.operatorToken, providerId);
    const paid = api.nodes.find((n) => n.node.id === nodeId)?.paid ?? [];
    assert.equal(await section.getByTestId('node-paid').textContent(), paid.length ? paid.map((x) => money(x.amount, x.asset)).join(', ') : money(0, 'usdc'));
    assert.equal(await section.getByTestId('asks-table').locator(`tr[data-class="${ASK_CLASS}"] td`).first().textContent(), amount(ASK));
    assert.equal(await page.getByText('Not available yet').count(), 0, 'no panel of the node page says "not available yet"');
  });
});
