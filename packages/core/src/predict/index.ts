export { type NodeUptimeOptions, NodeUptimeModel } from './node-uptime.js';
export { BoundedMap, quantileOf, Recent } from './recent.js';
export { keysOf, type PredictionAccuracy, type PredictionBasis, type RunFeatures, type RunTimeModelOptions, type RunTimePrediction, RunTimeModel, runFeaturesOf } from './run-time.js';
