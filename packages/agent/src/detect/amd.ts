/** AMD GPUs from `amd-smi static --json` (preferred) or `rocm-smi … --json` (fallback): pure parsers and the detection step. */
import type { GpuDevice } from '@gpux/protocol';
import type { ParsedGpus } from './nvidia.js';
import { type CommandRunner, describeFailure } from './runner.js';

export const AMD_SMI_ARGS = ['static', '--json'];
export const ROCM_SMI_ARGS = ['--showproductname', '--showmeminfo', 'vram', '--showuniqueid', '--showdriverversion', '--json'];

type Json = Record<string, unknown>;
const MIB = 1024 * 1024;

/** `amd-smi static --json`: an array of GPUs, or (ROCm 6.4+) `{ "gpu_data": [...] }`. */
export function parseAmdSmiStatic(text: string): ParsedGpus {
  const data = parseJson(text);
  const list = Array.isArray(data) ? data : isObject(data) && Array.isArray(data.gpu_data) ? data.gpu_data : undefined;
  if (!list) return { gpus: [], problems: ['amd-smi: output is not a JSON list of GPUs'] };
  const gpus: GpuDevice[] = [];
  list.forEach((entry: unknown, row) => {
    if (!isObject(entry)) return;
    const asic = obj(entry.asic);
    const bus = obj(entry.bus);
    const index = typeof entry.gpu === 'number' ? entry.gpu : row;
    const bdf = str(bus.bdf);
    const gpu: GpuDevice = {
      index,
      uuid: str(entry.uuid) ?? str(asic.asic_serial) ?? (bdf ? `AMD-${bdf}` : `amd-gpu${index}`),
      vendor: 'amd',
      model: str(asic.market_name) ?? str(obj(entry.board).product_name) ?? `AMD GPU ${index}`,
      vramMb: vramMb(obj(entry.vram).size) ?? 0,
    };
    const driver = str(obj(entry.driver).version) ?? str(obj(entry.driver).driver_version);
    if (driver) gpu.driver = driver;
    const gfx = str(asic.target_graphics_version);
    if (gfx) gpu.computeCapability = gfx.toLowerCase();
    gpus.push(gpu);
  });
  return { gpus, problems: [] };
}

/** `rocm-smi --json`: `{ "card0": {...}, "card1": {...}, "system": { "Driver version": ... } }`. Key case varies by version. */
export function parseRocmSmiJson(text: string): ParsedGpus {
  const data = parseJson(text);
  if (!isObject(data)) return { gpus: [], problems: ['rocm-smi: output is not a JSON object'] };
  const system = lowerKeys(obj(data.system));
  const gpus: GpuDevice[] = [];
  for (const [key, value] of Object.entries(data)) {
    const m = /^card(\d+)$/.exec(key);
    if (!m || !isObject(value)) continue;
    const card = lowerKeys(value);
    const index = Number(m[1]);
    const bus = str(card['pci bus']);
    const bytes = Number(str(card['vram total memory (b)']));
    const gpu: GpuDevice = {
      index,
      uuid: str(card['unique id']) ?? (bus ? `AMD-${bus}` : `amd-card${index}`),
      vendor: 'amd',
      model: [card['card series'], card['device name'], card['card model']].map(name).find((n) => n) ?? `AMD GPU (card${index})`,
      vramMb: Number.isFinite(bytes) && bytes > 0 ? Math.floor(bytes / MIB) : 0,
    };
    const driver = str(card['driver version']) ?? str(system['driver version']);
    if (driver) gpu.driver = driver;
    const gfx = str(card['gfx version']);
    if (gfx) gpu.computeCapability = gfx.toLowerCase();
    gpus.push(gpu);
  }
  gpus.sort((a, b) => a.index - b.index);
  return { gpus, problems: [] };
}

/** Tries amd-smi, then rocm-smi; a missing or failing tool means "no AMD GPUs", with the reasons in `problems`. */
export async function detectAmd(run: CommandRunner): Promise<ParsedGpus> {
  const reasons: string[] = [];
  const a = await run('amd-smi', AMD_SMI_ARGS);
  if (a.code === 0) {
    const parsed = parseAmdSmiStatic(a.stdout);
    if (parsed.problems.length === 0) return parsed;
    reasons.push(...parsed.problems);
  } else reasons.push(describeFailure('amd-smi', a));
  const r = await run('rocm-smi', ROCM_SMI_ARGS);
  if (r.code === 0) {
    const parsed = parseRocmSmiJson(r.stdout);
    if (parsed.problems.length === 0) return parsed;
    reasons.push(...parsed.problems);
  } else reasons.push(describeFailure('rocm-smi', r));
  return { gpus: [], problems: [`no AMD GPUs: ${reasons.join('; ')}`] };
}

/** The tools may print warnings before the JSON: start at the first bracket. */
function parseJson(text: string): unknown {
  const start = text.search(/[[{]/);
  if (start < 0) return undefined;
  try {
    return JSON.parse(text.slice(start));
  } catch {
    return undefined;
  }
}

function vramMb(size: unknown): number | undefined {
  if (typeof size === 'number') return Math.floor(size);
  let value: number | undefined;
  let unit = 'MB';
  if (isObject(size)) {
    value = typeof size.value === 'number' ? size.value : Number(size.value);
    unit = String(size.unit ?? 'MB');
  } else if (typeof size === 'string') {
    const m = /^([\d.]+)\s*([KMGT]?i?B)?$/i.exec(size.trim());
    if (m) [value, unit] = [Number(m[1]), m[2] ?? 'MB'];
  }
  if (value === undefined || !Number.isFinite(value)) return undefined;
  const factor: Record<string, number> = { B: 1 / MIB, KB: 1 / 1024, KIB: 1 / 1024, MB: 1, MIB: 1, GB: 1024, GIB: 1024, TB: 1024 * 1024, TIB: 1024 * 1024 };
  return Math.floor(value * (factor[unit.toUpperCase()] ?? 1));
}

/** A product name, unless the tool only knows a PCI id like "0x74a1". */
function name(v: unknown): string | undefined {
  const s = str(v);
  return s && !/^0x[0-9a-f]+$/i.test(s) ? s : undefined;
}

function str(v: unknown): string | undefined {
  if (typeof v === 'number') return String(v);
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t === '' || /^(N\/A|unknown|0x0+)$/i.test(t) ? undefined : t;
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function obj(v: unknown): Json {
  return isObject(v) ? v : {};
}

function lowerKeys(o: Json): Json {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k.toLowerCase().trim(), v]));
}
