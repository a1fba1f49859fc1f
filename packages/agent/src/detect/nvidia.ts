/** NVIDIA GPUs from `nvidia-smi --query-gpu=… --format=csv`: a pure parser and the detection step that runs the tool. */
import type { GpuDevice } from '@gpux/protocol';
import { type CommandRunner, describeFailure } from './runner.js';

export const NVIDIA_FIELDS = ['index', 'uuid', 'name', 'memory.total', 'driver_version', 'compute_cap'] as const;
/** Drivers before ~510 do not know compute_cap; we ask again without it. */
export const NVIDIA_FIELDS_LEGACY = NVIDIA_FIELDS.filter((f) => f !== 'compute_cap');

export function nvidiaSmiArgs(fields: readonly string[]): string[] {
  return [`--query-gpu=${fields.join(',')}`, '--format=csv,noheader,nounits'];
}

export interface ParsedGpus {
  gpus: GpuDevice[];
  problems: string[];
}

/**
 * Parses CSV lines as nvidia-smi prints them (values separated by ", "). `fields` names the queried columns in
 * order; a header line (`--format=csv` without noheader) overrides it, and unit suffixes ("81920 MiB") are dropped.
 * "[N/A]", "[Not Supported]" and "N/A" become undefined.
 */
export function parseNvidiaSmiCsv(text: string, fields: readonly string[] = NVIDIA_FIELDS): ParsedGpus {
  const lines = text.split(/\r?\n/).filter((l) => l.trim().length > 0);
  let columns = [...fields];
  const first = lines[0];
  if (first !== undefined && isHeader(first)) {
    columns = splitCsv(first).map((h) => h.replace(/\s*\[.*\]$/, '').trim());
    lines.shift();
  }
  const gpus: GpuDevice[] = [];
  const problems: string[] = [];
  lines.forEach((line, row) => {
    const values = mergeNameCommas(splitCsv(line), columns);
    if (values.length !== columns.length) {
      problems.push(`nvidia-smi: unexpected line (${values.length} values for ${columns.length} columns): ${line.trim()}`);
      return;
    }
    const get = (name: string): string | undefined => {
      const i = columns.indexOf(name);
      return i < 0 ? undefined : clean(values[i]);
    };
    const index = toInt(get('index')) ?? row;
    const memory = toInt(stripUnit(get('memory.total')));
    const gpu: GpuDevice = {
      index,
      uuid: get('uuid') ?? `nvidia-${index}`,
      vendor: 'nvidia',
      model: get('name') ?? get('gpu_name') ?? 'NVIDIA GPU (unknown model)',
      vramMb: memory ?? 0,
    };
    const driver = get('driver_version');
    if (driver) gpu.driver = driver;
    const cc = get('compute_cap');
    if (cc) gpu.computeCapability = cc;
    gpus.push(gpu);
  });
  return { gpus, problems };
}

/** Runs nvidia-smi; a missing or failing tool means "no NVIDIA GPUs", with the reason in `problems`. */
export async function detectNvidia(run: CommandRunner): Promise<ParsedGpus> {
  let fields: readonly string[] = NVIDIA_FIELDS;
  let r = await run('nvidia-smi', nvidiaSmiArgs(fields));
  if (r.code !== 0 && /compute_cap.*not a valid field/i.test(`${r.stderr}\n${r.stdout}`)) {
    fields = NVIDIA_FIELDS_LEGACY;
    r = await run('nvidia-smi', nvidiaSmiArgs(fields));
  }
  if (r.code !== 0) return { gpus: [], problems: [`no NVIDIA GPUs: ${describeFailure('nvidia-smi', r)}`] };
  return parseNvidiaSmiCsv(r.stdout, fields);
}

function isHeader(line: string): boolean {
  const cells = splitCsv(line).map((c) => c.replace(/\s*\[.*\]$/, ''));
  return cells.some((c) => c === 'index' || c === 'uuid' || c === 'name' || c === 'memory.total');
}

function splitCsv(line: string): string[] {
  return line.split(',').map((v) => v.trim());
}

/** A model name containing ", " would shift the columns: fold the surplus back into the name. */
function mergeNameCommas(values: string[], columns: string[]): string[] {
  const extra = values.length - columns.length;
  const at = columns.indexOf('name');
  if (extra <= 0 || at < 0) return values;
  return [...values.slice(0, at), values.slice(at, at + extra + 1).join(', '), ...values.slice(at + extra + 1)];
}

function clean(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const t = v.trim();
  if (t === '' || /^\[?(N\/A|Not Supported|Unknown Error|Insufficient Permissions)\]?$/i.test(t)) return undefined;
  return t;
}

function stripUnit(v: string | undefined): string | undefined {
  return v?.replace(/\s*MiB$/i, '');
}

function toInt(v: string | undefined): number | undefined {
  if (v === undefined || !/^\d+(\.\d+)?$/.test(v)) return undefined;
  return Math.round(Number(v));
}
