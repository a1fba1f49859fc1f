export * from './deadline.js';
export * from './ending.js';
export * from './lease-penalty.js';
export * from './money.js';
export * from './node-outcome.js';
export * from './plan.js';
export * from './settle.js';
export * from './snapshot.js';
