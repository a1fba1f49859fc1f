import { describe } from 'node:test';
import { join } from 'node:path';
import type { Store } from '@gpux/core';
import { requirePostgres, startPostgres, tempDir } from '@gpux/testing';
import { challengeTests } from '../../testing/src/conformance/ports/challenges.js';
import { openPostgresStore, openSqliteStore } from '../src/store/index.js';

describe('challenges sqlite', () => challengeTests(async () => {
  const dir = tempDir('gpux-p2');
  const store: Store = await openSqliteStore(join(dir.path, 'x.db'));
  return { store, cleanup: async () => { await store.close(); await dir.cleanup(); } };
}));
