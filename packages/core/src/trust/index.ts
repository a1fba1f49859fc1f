/** Trust policy (TRUST.md): audit rate, auditor choice, penalties, reputation, canaries, replication and buyer checkers. Pure. */
export * from './audit-budget.js';
export * from './attestation.js';
export * from './audit-rate.js';
export * from './auditor.js';
export * from './penalties.js';
export * from './reputation.js';
export * from './verification.js';
export * from './records.js';
export * from './verification-step.js';
export * from './checker.js';
export * from './checker-step.js';
