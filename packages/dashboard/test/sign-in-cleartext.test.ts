/**
 * No secrets in clear (issue 19), rendered: the built dashboard loaded from a plain-HTTP, non-loopback origin
 * (served by Playwright routing, so nothing leaves the machine) warns on the sign-in form and sends the token
 * only after the acknowledgement box is ticked. Loopback sign-in without the box is covered by dashboard.test.ts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchChromium, requireChromium } from './helpers/browser.js';
import { DIST_DIR, ensureBuilt } from './helpers/build.js';

const ORIGIN = 'http://gpux.example.test';
const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };

describe('sign-in over plain HTTP off loopback', requireChromium(), () => {
  let browser: Browser;
  before(async () => {
    ensureBuilt();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close().catch(() => {});
  });

  test('warns, and sends the token only after the box is ticked', async () => {
    const ctx = await browser.newContext();
    const authorizations: string[] = [];
    await ctx.route('**/*', async (route) => {
      const url = new URL(route.request().url());
      if (url.origin !== ORIGIN) return route.abort();
      if (url.pathname.startsWith('/v1/')) {
        authorizations.push(route.request().headers().authorization ?? '');
        return route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ error: { code: 'UNAUTHORIZED', message: 'no' } }) });
      }
      const file = url.pathname === '/' || !extname(url.pathname) ? 'index.html' : normalize(url.pathname).replace(/^\/+/, '');
      return route.fulfill({ status: 200, contentType: TYPES[extname(file)] ?? 'application/octet-stream', body: readFileSync(join(DIST_DIR, file)) });
    });
    const page = await ctx.newPage();
    await page.goto(`${ORIGIN}/`);
    const warning = page.getByTestId('cleartext-warning');
    await warning.waitFor();
    assert.match((await warning.textContent()) ?? '', /your token would cross the network in clear/);
    await page.getByLabel('API token').fill('gpux_secret');
    const button = page.getByRole('button', { name: 'Sign in' });
    assert.equal(await button.isDisabled(), true, 'no sign-in before the acknowledgement');
    await page.getByLabel('I understand: send my token in clear anyway').check();
    await button.click();
    await page.getByRole('alert').waitFor();
    assert.deepEqual(authorizations, ['Bearer gpux_secret']);
    await ctx.close();
  });
});
