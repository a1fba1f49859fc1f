/** @gpux/core: pure domain logic and the ports it needs. No I/O imports. */
export * from './errors.js';
export * from './ports.js';
export * from './ids.js';
export * from './records.js';
export * from './store.js';
export * from './lifecycle.js';
export * from './attempt-end/index.js';
export * from './scheduler/index.js';
export * from './federation/route.js';
export * from './executor.js';
export * from './market/index.js';
export * from './trust/index.js';
export * from './challenge/index.js';
export * from './blobs/backend.js';
export * from './predict/index.js';
