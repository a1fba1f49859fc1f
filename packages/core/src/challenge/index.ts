/** Proof of hardware (issue 12): the challenge math. Pure; the agent runs it, the coordinator checks it. */
export * from './matrices.js';
export * from './product.js';
export * from './freivalds.js';
export * from './classes.js';
export * from './reveal.js';
export * from './check.js';
export * from './verdict.js';
