/** @gpux/agent: the node daemon — hardware detection, identity, signed coordinator client, executors, work loop, simulated fleets. */
export { buildAdvertisement, simulatedGpus } from './advertisement.js';
export { startAgent, type StartAgentOptions } from './agent.js';
export { type AgentConfig, type AgentConfigOverrides, type ExecutorKind, loadAgentConfig, parseLabels } from './config.js';
export { CoordinatorApiError, CoordinatorClient, type CoordinatorClientOptions, CoordinatorUnreachableError, isUnreachable } from './coordinator-client.js';
export * from './detect/index.js';
export * from './executors/docker/index.js';
export { type CreateExecutorDeps, createExecutor } from './executors/index.js';
export { DEFAULT_OUTPUT_LIMITS, type OutputLimits, collectOutputs } from './executors/work-dir.js';
export { ProcessExecutor, type ProcessExecutorOptions, UNSAFE_PROCESS_MESSAGE } from './executors/process-executor.js';
export { SimulatedExecutor } from './executors/simulated-executor.js';
export { KEY_FILE, loadOrCreateIdentity, type NodeIdentity } from './identity.js';
export { createLogger, LOG_LEVELS, type LogLevel, silentLogger } from './logger.js';
export type { RunningAgent } from './loop/node-agent.js';
export { FLEET_MIX, type GpuModelInfo, type NodeShape, TRACE_GPU_MODELS, TRACE_NODE_COUNT, type TraceGpuModel } from './simulated/fleet-mix.js';
export { pickFleet, seededRandom } from './simulated/pick-fleet.js';
export { type SimulatedFleet, type SimulatedNodesOptions, simulatedAdvertisement, startSimulatedNodes } from './simulated/start-simulated-nodes.js';
export * from './challenge/index.js';
export { AGENT_VERSION } from './version.js';
