/** The scheduler: capacity index, filters, scores, fairness, the placement engine, explain, first-fit baseline. */
export * from './capacity-index.js';
export * from './demand.js';
export * from './exact-search.js';
export * from './explain.js';
export * from './fairness.js';
export * from './filters.js';
export * from './first-fit.js';
export * from './gpu-class.js';
export * from './node-stats.js';
export * from './offers.js';
export * from './placer.js';
export * from './quote.js';
export * from './requirements.js';
export * from './scarcity.js';
export * from './scores.js';
export * from './search.js';
export * from './types.js';
