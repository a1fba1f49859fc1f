/** The ordered list of migrations. Append only. */
import { migration0001 } from './0001-initial.js';
import { migration0002 } from './0002-scheduler.js';
import { migration0003 } from './0003-market.js';
import type { Migration } from './types.js';

export type { Migration } from './types.js';
export const MIGRATIONS: readonly Migration[] = [migration0001, migration0002, migration0003];
