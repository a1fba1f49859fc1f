/** Migration 0004: market: queue deadlines, fee remainders (issue 10 items 1,4,13,15). FROZEN once it lands. */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0004: Migration = {
  name: '0004-market-integrity',
  async up(_db: Kysely<unknown>, _dialect): Promise<void> {
    // filled in by the work on issue 10
  },
};
