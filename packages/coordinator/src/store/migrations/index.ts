/** The ordered list of migrations. Append only. */
import { migration0001 } from './0001-initial.js';
import { migration0002 } from './0002-scheduler.js';
import { migration0003 } from './0003-market.js';
import { migration0004 } from './0004-market-integrity.js';
import { migration0005 } from './0005-enrollment.js';
import { migration0006 } from './0006-attempt-writes.js';
import { migration0007 } from './0007-queue.js';
import { migration0008 } from './0008-edges.js';
import { migration0009 } from './0009-commitments.js';
import { migration0010 } from './0010-verification.js';
import { migration0011 } from './0011-reputation.js';
import { migration0012 } from './0012-canaries.js';
import { migration0013 } from './0013-attempt-deadline.js';
import { migration0014 } from './0014-audit-budget.js';
import { migration0015 } from './0015-challenges.js';
import { migration0016 } from './0016-blobs.js';
import { migration0017 } from './0017-job-blobs.js';
import { migration0018 } from './0018-e2e.js';
import { migration0019 } from './0019-cluster.js';
import { migration0020 } from './0020-live-node-counts.js';
import { migration0021 } from './0021-peers.js';
import { migration0022 } from './0022-forwards.js';
import { migration0023 } from './0023-finished-runs.js';
import type { Migration } from './types.js';

export type { Migration } from './types.js';
export const MIGRATIONS: readonly Migration[] = [migration0001, migration0002, migration0003, migration0004, migration0005, migration0006, migration0007, migration0008, migration0009, migration0010, migration0011, migration0012, migration0013, migration0014, migration0015, migration0016, migration0017, migration0018, migration0019, migration0020, migration0021, migration0022, migration0023];
