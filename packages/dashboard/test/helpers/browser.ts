/** Debian's Chromium driven by playwright-core, headless, with a fresh profile; skipped (or failed in CI) when absent. */
import { existsSync } from 'node:fs';
import { requireComponent } from '@gpux/testing';
import { type Browser, chromium } from 'playwright-core';

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
