/**
 * The data path on loopback (issue 13): a real coordinator process (`gpux coordinator start`, SQLite, the
 * filesystem blob store) and the real CLI as processes move a file of each size through the blob store:
 * `gpux blob put FILE`, then `gpux blob get SHA -o FILE2`; and, where the agent's data plane is there, a job on a
 * real node agent (`gpux node start --executor process`) that reads the blob as an input and writes it back as an
 * output (node-path.ts), fetched with `gpux job result --out`. Beside them, in the same run on the same disk: a
 * plain file copy (a read/write stream, and `cp`), each ended by an fsync as the blob store's writes are.
 * Reports MB/s (10^6 bytes) of each step, its ratio to the stream copy, and the peak RSS of the coordinator, the
 * CLI and the agent for each size: flat memory means those do not grow with the size.
 *
 *   npm run bench:data                       # 256 MiB, 1 GiB, 2 GiB (needs ~14 GB free under --dir)
 *   npm run bench:data -- --quick            # 256 MiB only
 *   npm run bench:data -- --sizes 64,512 --dir /var/tmp --no-node
 */
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { GpuxClient } from '@gpux/sdk';
import { seededBytes } from '@gpux/testing';
import { freePort, type GpuxProcess, spawnGpux, waitFor } from '../../packages/testing/src/processes.js';
import { nodePath, type NodePathResult } from './node-path.js';
import { MemoryWatch, runCli } from './procs.js';

const MiB = 2 ** 20;
const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
const opt = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
if (flag('help')) {
  process.stdout.write('npm run bench:data -- [--quick] [--sizes MiB,MiB,...] [--dir DIR] [--no-node]\n');
  process.exit(0);
}
const SIZES = (opt('sizes') ?? process.env.GPUX_BENCH_DATA_SIZES ?? (flag('quick') ? '256' : '256,1024,2048')).split(',').map(Number);
if (SIZES.some((s) => !Number.isInteger(s) || s < 1)) throw new Error(`--sizes takes sizes in MiB, e.g. 256,1024,2048; got ${opt('sizes')}`);
const ROOT = mkdtempSync(join(opt('dir') ?? tmpdir(), 'gpux-bench-data-'));

export interface Step {
  seconds: number;
  mbPerS: number;
  /** Throughput over the stream copy's (same size, same run, same disk). */
  vsCopy: number;
  /** Peak RSS of the CLI process (MiB), where a CLI ran. */
  cliPeakRssMiB?: number;
  /** Peak RSS of the coordinator while the step ran (MiB, VmRSS polled every 50 ms). */
  coordinatorPeakRssMiB?: number;
}

interface Row {
  sizeMiB: number;
  copyStream: Step;
  cp: Step;
  put: Step;
  get: Step;
  node: NodePathResult;
  /** The coordinator's VmHWM over its whole life (a fresh coordinator per size). */
  coordinatorHwmMiB: number;
}

async function writeInput(path: string, mib: number): Promise<void> {
  const out = createWriteStream(path);
  const block = seededBytes(MiB, 13);
  for (let i = 0; i < mib; i++) {
    block.writeUInt32LE(i, 0); // no two MiB alike
    if (!out.write(Buffer.from(block))) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

async function fsync(path: string): Promise<void> {
  const fh = await open(path, 'r+');
  await fh.sync();
  await fh.close();
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

const mbps = (bytes: number, seconds: number) => bytes / 1e6 / seconds;

/** A fresh coordinator (SQLite, fs blob store under `dir`), its operator token and a buyer token. */
async function startCoordinator(dir: string): Promise<{ proc: GpuxProcess; url: string; operator: string; buyer: string; env: NodeJS.ProcessEnv }> {
  const port = await freePort();
  const env = {
    GPUX_HOME: join(dir, 'home'),
    GPUX_MARKET: 'off',
    GPUX_VERIFY: 'off',
    GPUX_CHALLENGE: 'off',
    GPUX_LOG_LEVEL: 'warn',
    GPUX_SCHEDULE_PASS_MS: '100',
    GPUX_BLOB_QUOTA_BYTES: String(64 * 2 ** 30),
  };
  const proc = spawnGpux(['coordinator', 'start', '--port', String(port), '--data-dir', join(dir, 'coordinator')], env);
  const operator = await waitFor('the coordinator to print its operator token', () => /operator token[^:]*: (\S+)/.exec(proc.output())?.[1], 60_000);
  const url = `http://127.0.0.1:${port}`;
  const buyer = (await new GpuxClient({ url, token: operator }).createToken({ role: 'buyer', name: 'bench-buyer' })).token;
  return { proc, url, operator, buyer, env };
}

async function runSize(sizeMiB: number): Promise<Row> {
  const dir = join(ROOT, `${sizeMiB}`);
  mkdirSync(dir, { recursive: true });
  const bytes = sizeMiB * MiB;
  const input = join(dir, 'input.bin');
  await writeInput(input, sizeMiB);
  await fsync(input);

  // (a) The baselines: the same bytes copied on the same disk, each ended by an fsync like the blob store's.
  const copy = join(dir, 'copy.bin');
  const copySeconds = await timed(async () => {
    await pipeline(createReadStream(input, { highWaterMark: MiB }), createWriteStream(copy));
    await fsync(copy);
  });
  await rm(copy);
  const cpSeconds = await timed(async () => {
    await new Promise<void>((resolve, reject) => spawn('cp', [input, copy], { stdio: 'inherit' }).on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`cp exited ${c}`)))));
    await fsync(copy);
  });
  await rm(copy);
  const copyMbps = mbps(bytes, copySeconds);
  const step = (seconds: number, extra: Partial<Step> = {}): Step => ({ seconds, mbPerS: mbps(bytes, seconds), vsCopy: mbps(bytes, seconds) / copyMbps, ...extra });

  const c = await startCoordinator(dir);
  const coordWatch = new MemoryWatch(c.proc.child.pid as number);
  const cliEnv = { GPUX_URL: c.url, GPUX_TOKEN: c.buyer, GPUX_HOME: join(dir, 'cli-home') };
  try {
    // (b) gpux blob put FILE: hash, upload in chunks, the coordinator hashes again and keeps it.
    coordWatch.reset();
    const put = await runCli(['blob', 'put', input, '--json'], cliEnv);
    const putCoord = coordWatch.peakRss;
    const sha256 = (JSON.parse(put.stdout) as { sha256: string }).sha256;

    // (c) gpux blob get SHA -o FILE2: streamed down, hashed, fsynced, renamed into place.
    coordWatch.reset();
    const out = join(dir, 'got.bin');
    const get = await runCli(['blob', 'get', sha256, '-o', out, '--json'], cliEnv);
    const getCoord = coordWatch.peakRss;
    await rm(out);

    // (d, e) The node path: an agent downloads the input and uploads it back as the job's output.
    coordWatch.reset();
    const node = await nodePath({ dir, url: c.url, operator: c.operator, buyer: c.buyer, env: c.env, cliEnv, sha256, bytes, copyMbps, coordWatch });

    coordWatch.stop();
    return {
      sizeMiB,
      copyStream: step(copySeconds),
      cp: step(cpSeconds),
      put: step(put.seconds, { cliPeakRssMiB: put.peakRssMiB, coordinatorPeakRssMiB: putCoord }),
      get: step(get.seconds, { cliPeakRssMiB: get.peakRssMiB, coordinatorPeakRssMiB: getCoord }),
      node,
      coordinatorHwmMiB: coordWatch.hwm,
    };
  } finally {
    coordWatch.stop();
    await c.proc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const f1 = (n: number | undefined) => (n === undefined ? '-' : n.toFixed(1));
const f0 = (n: number | undefined) => (n === undefined ? '-' : n.toFixed(0));

function table(rows: Row[]): string {
  const lines = [['size MiB', 'step', 's', 'MB/s', 'x copy', 'CLI peak RSS MiB', 'coordinator peak RSS MiB', 'agent peak RSS MiB']];
  for (const r of rows) {
    const add = (name: string, s: Step | undefined, agent?: number) => {
      if (s) lines.push([String(r.sizeMiB), name, f1(s.seconds), f0(s.mbPerS), s.vsCopy.toFixed(2), f0(s.cliPeakRssMiB), f0(s.coordinatorPeakRssMiB), f0(agent)]);
    };
    add('copy (stream + fsync)', r.copyStream);
    add('cp + fsync', r.cp);
    add('gpux blob put', r.put);
    add('gpux blob get', r.get);
    if ('skipped' in r.node) lines.push([String(r.sizeMiB), `node path: skipped (${r.node.skipped})`, '', '', '', '', '', '']);
    else {
      add('node: agent download (d)', r.node.download, r.node.agentPeakRssMiB);
      add('node: agent upload (e)', r.node.upload, r.node.agentPeakRssMiB);
      add('node: job submit→succeeded', r.node.job, r.node.agentPeakRssMiB);
      add('gpux job result --out', r.node.result);
    }
    lines.push([String(r.sizeMiB), 'coordinator VmHWM (life)', '', '', '', '', f0(r.coordinatorHwmMiB), '']);
  }
  const widths = lines[0]?.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length))) ?? [];
  return `${lines.map((l) => l.map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ')).join('\n')}\n`;
}

// What a CLI process costs before it moves a byte (node + tsx start, the command loaded): part of every CLI step.
const cliStartup = await runCli(['--version'], {});
process.stderr.write(`bench:data: gpux --version takes ${cliStartup.seconds.toFixed(2)} s and ${cliStartup.peakRssMiB.toFixed(0)} MiB (every CLI step includes this start)\n`);
const rows: Row[] = [];
try {
  for (const size of SIZES) {
    process.stderr.write(`bench:data: ${size} MiB…\n`);
    rows.push(await runSize(size));
  }
} finally {
  rmSync(ROOT, { recursive: true, force: true });
}
process.stdout.write(table(rows));
process.stdout.write(`CLI start alone (gpux --version): ${cliStartup.seconds.toFixed(2)} s, peak RSS ${cliStartup.peakRssMiB.toFixed(0)} MiB\n`);
const resultsDir = new URL('../results/', import.meta.url);
mkdirSync(resultsDir, { recursive: true });
writeFileSync(new URL('data.json', resultsDir), `${JSON.stringify({ at: new Date().toISOString(), node: process.version, sizesMiB: SIZES, cliStartup: { seconds: cliStartup.seconds, peakRssMiB: cliStartup.peakRssMiB }, rows }, null, 2)}\n`);
process.stdout.write('wrote bench/results/data.json\n');
