/**
 * Consistency of a node's advertisement beyond its schema bounds (issue 10 item 2): a GPU of a known model
 * must report that model's memory, and a model name must match its vendor. Fake supply usually claims a
 * famous model; these checks make it claim one consistently or not at all. Pure: no store, no clock.
 */
import type { NodeAdvertisement } from '@gpux/protocol';

export interface AdProblem {
  path: string;
  message: string;
}

/** Known models: a pattern on the lower-case model name and the VRAM range (GiB) real boards report. */
const KNOWN: readonly { name: string; vendor: 'nvidia' | 'amd'; re: RegExp; minGb: number; maxGb: number }[] = [
  { name: 'H100', vendor: 'nvidia', re: /\bh100\b/, minGb: 70, maxGb: 96 },
  { name: 'H800', vendor: 'nvidia', re: /\bh800\b/, minGb: 70, maxGb: 96 },
  { name: 'H200', vendor: 'nvidia', re: /\bh200\b/, minGb: 135, maxGb: 145 },
  { name: 'B200', vendor: 'nvidia', re: /\bb200\b/, minGb: 170, maxGb: 200 },
  { name: 'A100', vendor: 'nvidia', re: /\ba100\b/, minGb: 38, maxGb: 82 },
  { name: 'L40S', vendor: 'nvidia', re: /\bl40s?\b/, minGb: 44, maxGb: 49 },
  { name: 'RTX 4090', vendor: 'nvidia', re: /\b4090\b/, minGb: 22, maxGb: 25 },
  { name: 'RTX 3090', vendor: 'nvidia', re: /\b3090\b/, minGb: 22, maxGb: 25 },
  { name: 'MI300X', vendor: 'amd', re: /\bmi300x\b/, minGb: 185, maxGb: 200 },
  { name: 'MI250X', vendor: 'amd', re: /\bmi250x?\b/, minGb: 120, maxGb: 130 },
];

const AMD_WORDS = /\b(amd|radeon|instinct|mi\d{3}x?)\b/;
const NVIDIA_WORDS = /\b(nvidia|geforce|tesla|quadro|rtx)\b/;

export function adProblems(ad: NodeAdvertisement): AdProblem[] {
  const problems: AdProblem[] = [];
  ad.gpus.forEach((g, i) => {
    const model = g.model.toLowerCase();
    const at = `advertisement.gpus.${i}`;
    if (g.vendor === 'nvidia' && AMD_WORDS.test(model)) problems.push({ path: `${at}.vendor`, message: `"${g.model}" is an AMD model, not nvidia` });
    if (g.vendor === 'amd' && NVIDIA_WORDS.test(model)) problems.push({ path: `${at}.vendor`, message: `"${g.model}" is an NVIDIA model, not amd` });
    const known = KNOWN.find((k) => k.re.test(model));
    if (!known) return;
    const gb = g.vramMb / 1024;
    if (gb < known.minGb || gb > known.maxGb) {
      problems.push({ path: `${at}.vramMb`, message: `an ${known.name} has ${known.minGb}-${known.maxGb} GiB of memory; ${g.vramMb} MiB (${gb.toFixed(1)} GiB) is not one` });
    }
  });
  return problems;
}
