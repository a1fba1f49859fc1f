/**
 * The rule for tests that need a real component (PostgreSQL, Docker, Chromium…): absent locally, the test is
 * skipped with the reason; under GPUX_REQUIRE_ALL=1 (CI) a missing component is a failure, never a skip.
 */

export function requireAllComponents(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.GPUX_REQUIRE_ALL === '1';
}

/**
 * Use as node:test options: `describe('…', requireComponent('postgresql', ok, why), …)`.
 * Throws when the component is missing and GPUX_REQUIRE_ALL=1, so the test file fails.
 */
export function requireComponent(name: string, available: boolean, why: string): { skip: string | false } {
  if (available) return { skip: false };
  const reason = `${name} is not available: ${why}`;
  if (requireAllComponents()) throw new Error(`${reason} (GPUX_REQUIRE_ALL=1: a missing component is a failure)`);
  return { skip: reason };
}
