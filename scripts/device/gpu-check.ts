/**
 * The GPU check run on a machine with a real NVIDIA GPU (bundled with esbuild, run with a carried node):
 * real detection through nvidia-smi, then a whole network on it — coordinator (SQLite), one agent with the
 * process executor (the device has no Docker) — and real GPU jobs submitted through the SDK: a PyTorch
 * matrix product checked with Freivalds' algorithm, a CPU-only job that must see no GPU, and a job that
 * cannot fit (explain says why). Everything it learns goes to $OUT as JSON.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectHardware } from '../../packages/agent/src/detect/index.js';
import { startAgent } from '../../packages/agent/src/agent.js';
import { loadAgentConfig } from '../../packages/agent/src/config.js';
import { cryptoRandom, issueToken, loadCoordinatorConfig, startCoordinator } from '../../packages/coordinator/src/index.js';
import { systemClock } from '../../packages/core/src/index.js';
import { GpuxClient } from '../../packages/sdk/src/index.js';

const out = process.env.OUT ?? '/tmp/gpux-device-out';
mkdirSync(out, { recursive: true });
const save = (name: string, data: unknown) => writeFileSync(join(out, name), `${JSON.stringify(data, null, 2)}\n`);
const python = process.env.GPUX_PYTHON ?? 'python3';

const MATMUL = `
import json, os, time, torch
n = 8192
assert torch.cuda.is_available(), "no CUDA device visible"
dev = torch.device("cuda:0")
g = torch.Generator(device=dev).manual_seed(7)
a = torch.randn(n, n, device=dev, generator=g); b = torch.randn(n, n, device=dev, generator=g)
torch.cuda.synchronize(); t = time.time(); c = a @ b; torch.cuda.synchronize(); dt = time.time() - t
# Freivalds: for random x, A(Bx) == Cx with error <= 2^-k over k rounds (float tolerance).
ok = all(torch.allclose(a @ (b @ x), c @ x, rtol=1e-3, atol=1e-1 * n ** 0.5)
         for x in (torch.randn(n, 1, device=dev, generator=g) for _ in range(8)))
info = {"device": torch.cuda.get_device_name(0), "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "nvidia_visible": os.environ.get("NVIDIA_VISIBLE_DEVICES"), "count": torch.cuda.device_count(),
        "n": n, "seconds": dt, "tflops": 2 * n ** 3 / dt / 1e12, "freivalds_rounds": 8, "freivalds_ok": ok,
        "torch": torch.__version__}
open(os.path.join(os.environ["GPUX_OUTPUTS"], "matmul.json"), "w").write(json.dumps(info))
print(json.dumps(info))
`;
const NO_GPU = `
import json, os, torch
print(json.dumps({"cuda_available": torch.cuda.is_available(), "visible": os.environ.get("CUDA_VISIBLE_DEVICES")}))
`;

async function main() {
  const hw = await detectHardware();
  save('detected.json', hw);
  console.log(`detected ${hw.gpus.length} GPU(s): ${hw.gpus.map((g) => g.model).join(', ')}; problems: ${hw.problems.join('; ') || 'none'}`);

  const dir = join(tmpdir(), `gpux-device-${process.pid}`);
  const config = loadCoordinatorConfig({ GPUX_HOME: dir }, { port: 0, heartbeatIntervalMs: 1000, logLevel: 'warn' });
  const coord = await startCoordinator(config);
  const { token } = await issueToken(coord.store, { role: 'buyer', name: 'device' }, systemClock, cryptoRandom);
  const agent = await startAgent(
    loadAgentConfig({ GPUX_HOME: dir, GPUX_LOG_LEVEL: 'warn' }, { coordinatorUrl: coord.url, executor: 'process', allowUnsafeProcess: true }),
  );
  const gpux = new GpuxClient({ url: coord.url, token });
  const results: Record<string, unknown> = {};
  try {
    const node = await gpux.whoami().then(() => fetch(`${coord.url}/v1/stats`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json()));
    results.stats = node;
    const run = async (name: string, spec: Parameters<GpuxClient['submitJob']>[0]) => {
      const { job } = await gpux.submitJob(spec);
      const done = await gpux.waitForJob(job.id, { pollMs: 250 });
      const detail = await gpux.getJob(job.id);
      const logs = (await gpux.jobLogs(job.id, { limit: 1000 })).entries.map((e) => `${e.stream}: ${e.data}`).join('');
      const result = done.state === 'succeeded' ? await gpux.jobResult(job.id) : null;
      results[name] = { job: done, attempts: detail.attempts, logs, outputs: result?.outputs.map((o) => ({ path: o.path, sha256: o.sha256, text: o.content && Buffer.from(o.content, 'base64').toString() })) };
      console.log(`${name}: ${done.state} (exit ${done.exitCode}) on GPUs ${JSON.stringify(detail.attempts.at(-1)?.gpuIndices)}\n${logs}`);
    };
    await run('matmul', {
      name: 'h200-matmul',
      image: 'pytorch',
      command: [python, '-c', MATMUL],
      resources: { gpu: { count: 1, vendor: 'nvidia', models: ['H200'], minVramGb: 100 } },
      timeoutSeconds: 300,
    });
    await run('cpu-only-sees-no-gpu', { name: 'no-gpu', image: 'pytorch', command: [python, '-c', NO_GPU], timeoutSeconds: 120 });
    const { job } = await gpux.submitJob({ name: 'too-big', image: 'x', command: ['true'], resources: { gpu: { count: 4, models: ['H200'] } } });
    await new Promise((r) => setTimeout(r, 1500));
    results.explainTooBig = await gpux.explainJob(job.id);
    await gpux.cancelJob(job.id);
  } finally {
    save('network.json', results);
    await agent.stop();
    await coord.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    save('error.json', { message: String(err), stack: err instanceof Error ? err.stack : undefined });
    process.exit(1);
  },
);
