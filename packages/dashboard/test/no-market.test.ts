/** A coordinator that runs without a market, in Chromium: the dashboard says plainly that jobs are free. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BillResponse, MarketPricesResponse } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, requireChromium } from './helpers/browser.js';
import { ensureBuilt } from './helpers/build.js';
import { LOCAL_LABEL, type Network, startNetwork, until } from './helpers/network.js';

const FREE = 'This coordinator runs without a market: jobs are free.';

describe('dashboard without a market', requireChromium(), () => {
  let net: Network;
  let browser: Browser;
  let page: Page;

  before(async () => {
    ensureBuilt();
    net = await startNetwork({ market: false });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1360, height: 900 } })).newPage();
    await page.goto(`${net.url}/`);
    await page.getByLabel('API token').fill(net.operatorToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
  });

  after(async () => {
    await browser?.close().catch(() => {});
    await net?.close();
  });

  test('the market page and the overview say jobs are free', async () => {
    const prices = (await (await fetch(`${net.url}/v1/market/prices`, { headers: { authorization: `Bearer ${net.buyerToken}` } })).json()) as MarketPricesResponse;
    assert.equal(prices.market, false);
    await page.getByRole('region', { name: 'Price per GPU-hour' }).getByText(FREE).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Market' }).click();
    await page.getByTestId('no-market').getByText(FREE).waitFor();
    assert.equal(await page.getByTestId('price-table').count(), 0);
    await page.getByTestId('treasury').waitFor(); // the ledger still exists: it is simply empty of jobs' money
  });

  test('a job runs free: its page says so and shows no bill', async () => {
    const client = new GpuxClient({ url: net.url, token: net.buyerToken });
    const { job } = await client.submitJob({ name: 'free-job', image: 'busybox', command: ['/bin/sh', '-c', 'echo free'], constraints: { nodeLabels: { [LOCAL_LABEL]: 'true' } } });
    assert.equal(job.payment, null);
    await until('the job succeeds', async () => ((await client.getJob(job.id)).job.state === 'succeeded' ? true : undefined), 60_000);
    const bill = (await (await fetch(`${net.url}/v1/jobs/${job.id}/bill`, { headers: { authorization: `Bearer ${net.buyerToken}` } })).json()) as BillResponse;
    assert.equal(bill.market, false);
    assert.equal(bill.lines.length, 0);
    await page.goto(`${net.url}/jobs/${job.id}`);
    await page.getByRole('region', { name: 'Bill' }).getByText('This job runs free: the coordinator runs without a market.').waitFor();
    assert.equal(await page.getByTestId('bill').count(), 0);
    await page.getByTestId('attempts').getByText('succeeded').waitFor();
    assert.equal(await page.getByTestId('attempts').locator('[data-field=price]').count(), 0);
  });
});
