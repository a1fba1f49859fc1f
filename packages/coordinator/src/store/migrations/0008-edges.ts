/** Migration 0008: cancel grace and other hardening columns (issue 10 items 8,14). FROZEN once it lands. */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0008: Migration = {
  name: '0008-edges',
  async up(_db: Kysely<unknown>, _dialect): Promise<void> {
    // filled in by the work on issue 10
  },
};
