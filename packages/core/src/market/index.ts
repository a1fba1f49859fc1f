export * from './arith.js';
export * from './classes.js';
export * from './clearing.js';
export * from './ledger.js';
export * from './price-index.js';
export * from './settlement.js';
export * from './records.js';
export * from './settlement-adapter.js';
