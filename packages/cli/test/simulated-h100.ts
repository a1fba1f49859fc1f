/** Test helper: a simulated agent advertising `gpus` H100s (32 cores, 256 GiB), started against a coordinator. */
import { loadAgentConfig, loadOrCreateIdentity, type RunningAgent, SimulatedExecutor, silentLogger, simulatedGpus, startAgent } from '@gpux/agent';
import { cryptoRandom } from '@gpux/coordinator';

export async function startSimulatedH100(o: { url: string; dataDir: string; enrollmentToken: string; region: string; hostname: string; gpus: number; executor?: SimulatedExecutor }): Promise<RunningAgent> {
  const config = loadAgentConfig({}, { coordinatorUrl: o.url, dataDir: o.dataDir, executor: 'simulated', enrollmentToken: o.enrollmentToken, region: o.region });
  const identity = await loadOrCreateIdentity(config.dataDir);
  const advertisement = {
    hostname: o.hostname,
    agentVersion: '0.0.0-test',
    os: 'linux (simulated)',
    arch: 'x64',
    cpuCores: 32,
    memoryMb: 256 * 1024,
    gpus: simulatedGpus(o.gpus, identity.nodeId.slice(2, 14), 'NVIDIA H100 80GB HBM3', 81_920),
    docker: { available: false, gpuRuntime: 'none' as const },
    executors: ['simulated' as const],
    region: o.region,
    simulated: true,
  };
  return startAgent(config, { executor: o.executor ?? new SimulatedExecutor(), identity, advertisement, logger: silentLogger, random: cryptoRandom });
}
