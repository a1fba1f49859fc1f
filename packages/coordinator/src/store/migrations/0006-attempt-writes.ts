/** Migration 0006: per-attempt log and event budgets (issue 10 items 5,6). FROZEN once it lands. */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0006: Migration = {
  name: '0006-attempt-writes',
  async up(_db: Kysely<unknown>, _dialect): Promise<void> {
    // filled in by the work on issue 10
  },
};
