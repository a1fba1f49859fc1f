/** Debian's Chromium driven by playwright-core, headless, with a fresh profile; skipped (or failed in CI) when absent. */
import { existsSync } from 'node:fs';
import { requireComponent } from '@gpux/testing';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.GPUX_CHROMIUM ?? '/usr/bin/chromium';

export function requireChromium(): { skip: string | false } {
  return requireComponent('chromium', existsSync(CHROMIUM), `${CHROMIUM} not found (Debian: apt-get install chromium)`);
}

export function launchChromium(): Promise<Browser> {
  // chromium.launch starts from a new, empty user-data dir of its own and removes it on close.
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: 60_000,
  });
}

/** A fresh context (no cache, empty storage) at `url`, signed in through the form; kept in `contexts` for closing. */
export async function signedInPage(browser: Browser, contexts: BrowserContext[], url: string, token: string, viewport = { width: 1360, height: 900 }): Promise<Page> {
  const ctx = await browser.newContext({ viewport });
  contexts.push(ctx);
  const page = await ctx.newPage();
  await page.goto(`${url}/`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
  return page;
}
