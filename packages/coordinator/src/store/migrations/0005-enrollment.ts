/** Migration 0005: enrollment tokens, token expiry and revocation (issue 10 items 2,14). FROZEN once it lands. */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0005: Migration = {
  name: '0005-enrollment',
  async up(_db: Kysely<unknown>, _dialect): Promise<void> {
    // filled in by the work on issue 10
  },
};
