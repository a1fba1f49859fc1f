/** Migration 0007: what the scheduling pass needs without reading specs, queued-per-buyer limits (issue 10 item 7). FROZEN once it lands. */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0007: Migration = {
  name: '0007-queue',
  async up(_db: Kysely<unknown>, _dialect): Promise<void> {
    // filled in by the work on issue 10
  },
};
