/**
 * Reading the Alibaba GPU trace files (cluster-trace-gpu-v2023, openb_*; Weng et al., ATC '23) or any files
 * with the same columns: the node list (sn, cpu_milli, memory_mib, gpu, model) and the pod list (name,
 * cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time,
 * scheduled_time). Columns are found by header name, so their order and extra columns do not matter.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface NodeRow {
  name: string;
  cpuCores: number;
  memoryMb: number;
  gpus: number;
  model: string;
}

export interface PodRow {
  name: string;
  cpuCores: number;
  memoryMb: number;
  gpus: number;
  /** gpu_milli < 1000 on one GPU: a shared GPU in the trace; gpux places whole GPUs, so it takes one. */
  gpuMilli: number;
  /** Accepted GPU models ('' = any), from gpu_spec, split on '|'. */
  models: string[];
  qos: string;
  phase: string;
  creation: number;
  deletion: number | null;
  scheduled: number | null;
}

const here = dirname(fileURLToPath(import.meta.url));
/** The copies shipped in the repository (bench/replay/data/, sources in its README), so a plain clone replays. */
const DATA_DIR = join(here, 'data');
export const DEFAULT_NODE_FILE = join(DATA_DIR, 'alibaba-gpu-v2023-openb_node_list_gpu_node.csv');
export const DEFAULT_POD_FILE = join(DATA_DIR, 'alibaba-gpu-v2023-openb_pod_list_default.csv');

/** Rows of a simple CSV (no quoted commas in these files) as header → value maps. */
export function parseCsv(text: string): Array<Record<string, string>> {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  const header = (lines.shift() ?? '').split(',').map((h) => h.trim());
  return lines.map((line) => {
    const cells = line.split(',');
    return Object.fromEntries(header.map((h, i) => [h, (cells[i] ?? '').trim()]));
  });
}

function need(rows: Array<Record<string, string>>, file: string, cols: string[]): void {
  const have = new Set(Object.keys(rows[0] ?? {}));
  const missing = cols.filter((c) => !have.has(c));
  if (rows.length === 0 || missing.length > 0) throw new Error(`${file}: expected a header with ${cols.join(', ')}${missing.length ? `; missing ${missing.join(', ')}` : ' and at least one row'}`);
}

const num = (v: string | undefined): number | null => (v === undefined || v === '' || Number.isNaN(Number(v)) ? null : Number(v));

export function readNodeList(file: string): NodeRow[] {
  if (!existsSync(file)) throw new Error(`node list ${file} not found (pass --nodes-file)`);
  const rows = parseCsv(readFileSync(file, 'utf8'));
  need(rows, file, ['cpu_milli', 'memory_mib', 'gpu', 'model']);
  return rows.map((r, i) => ({
    name: r.sn || `node-${i}`,
    cpuCores: Math.max(1, Math.floor((num(r.cpu_milli) ?? 1000) / 1000)),
    memoryMb: num(r.memory_mib) ?? 0,
    gpus: num(r.gpu) ?? 0,
    model: r.model || 'GPU',
  }));
}

export function readPodList(file: string): PodRow[] {
  if (!existsSync(file)) throw new Error(`pod list ${file} not found (pass --pods-file)`);
  const rows = parseCsv(readFileSync(file, 'utf8'));
  need(rows, file, ['cpu_milli', 'memory_mib', 'num_gpu', 'creation_time']);
  return rows.map((r, i) => ({
    name: r.name || `pod-${i}`,
    cpuCores: Math.max(0.001, (num(r.cpu_milli) ?? 1000) / 1000),
    memoryMb: num(r.memory_mib) ?? 0,
    gpus: num(r.num_gpu) ?? 0,
    gpuMilli: num(r.gpu_milli) ?? 1000,
    models: (r.gpu_spec ?? '').split('|').filter((m) => m !== ''),
    qos: r.qos ?? '',
    phase: r.pod_phase ?? '',
    creation: num(r.creation_time) ?? 0,
    deletion: num(r.deletion_time),
    scheduled: num(r.scheduled_time),
  }));
}
