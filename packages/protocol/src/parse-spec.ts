/**
 * Validate an untrusted job spec object into problems or a normalized spec.
 *
 * A spec as a person writes it may give its price as a decimal in the job's asset ("2.5", "2.5 USDC"); the
 * wire and the stored spec keep integer minor units, so the price is converted here, before the schema, by
 * the rules every CLI amount follows (protocol readAmount): exact, never through a float.
 */
import { problemsFromZod, type Problem } from './errors.js';
import { JobSpec } from './job-spec.js';
import { type Asset, ASSET_SYMBOL, ASSETS, readAmountWithAsset } from './money.js';
import { SPEC_PARSE_PARAMS } from './spec-messages.js';

export function parseJobSpec(input: unknown): { ok: true; spec: JobSpec } | { ok: false; problems: Problem[] } {
  const { value, problems } = withPriceInMinorUnits(input);
  const result = JobSpec.safeParse(value, SPEC_PARSE_PARAMS);
  if (result.success && problems.length === 0) return { ok: true, spec: result.data };
  return { ok: false, problems: [...problems, ...(result.success ? [] : problemsFromZod(result.error))] };
}

/**
 * maxPricePerGpuHour as text ("2.5", "2.5 USDC") → integer minor units of the spec's asset. An integer stays
 * as it is (minor units); a fractional number is refused (it may already have been rounded by a float).
 * Anything else is left to the schema, which says what it must be.
 */
export function withPriceInMinorUnits(input: unknown): { value: unknown; problems: Problem[] } {
  if (input === null || typeof input !== 'object' || Array.isArray(input) || !('maxPricePerGpuHour' in input)) return { value: input, problems: [] };
  const { maxPricePerGpuHour: price, ...rest } = input as Record<string, unknown>;
  const asset = specAsset(input);
  const problem = (message: string) => ({ value: rest, problems: [{ path: 'maxPricePerGpuHour', message }] });
  if (typeof price === 'number' && Number.isFinite(price) && !Number.isInteger(price)) {
    return problem(`${price} is not whole minor units: write the price as text in ${ASSET_SYMBOL[asset]}, "${price}" or "${price} ${ASSET_SYMBOL[asset]}", or in minor units (6 decimals: 2500000 is 2.5)`);
  }
  if (typeof price !== 'string') return { value: input, problems: [] };
  const read = readAmountWithAsset(price, asset);
  if (!read.ok && read.reason === 'format') {
    return problem(`"${price}" is not a price: write a decimal in ${ASSET_SYMBOL[asset]} ("2.5" or "2.5 ${ASSET_SYMBOL[asset]}", a dot for decimals) or whole minor units (2500000)`);
  }
  if (!read.ok) return problem(read.message);
  return { value: { ...rest, maxPricePerGpuHour: read.minor }, problems: [] };
}

/** The asset the spec pays with; a wrong one is the schema's to report, and the price is read in usdc meanwhile. */
function specAsset(input: object): Asset {
  const a = (input as { asset?: unknown }).asset;
  return typeof a === 'string' && (ASSETS as readonly string[]).includes(a) ? (a as Asset) : 'usdc';
}
