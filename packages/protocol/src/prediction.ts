/** Issue 17: what the network's own finished runs say of a job's run time, as buyers see it. */
import { z } from 'zod';

export const PREDICTION_BASES = ['family', 'buyer-image', 'image', 'shape', 'fleet', 'estimate', 'none'] as const;

export const RunPrediction = z.object({
  runTimeMs: z
    .object({ median: z.number().int(), p90: z.number().int() })
    .nullable()
    .describe('Predicted run time, ms: the median and the 90th percentile of the earlier runs it comes from; null when nothing is known yet'),
  basis: z
    .enum(PREDICTION_BASES)
    .describe(
      'Which earlier succeeded runs: family (same buyer, image, job name and resources), buyer-image, image (same image and name, any buyer), shape (same GPU count, CPU and memory sizes, priority), fleet (all runs), or none',
    ),
  samples: z.number().int().describe('How many earlier runs the figure comes from (the last ones, at most 32 per group)'),
  basisText: z.string().describe('The basis in words, after the count ("runs of this job family (same image, name and resources)"); empty for none'),
  startAt: z
    .object({ median: z.number().int(), p90: z.number().int() })
    .nullish()
    .describe(
      "A queued job: when room for it on nodes it fits is predicted to free up, by the median and by the p90 ends of what runs there, if no job ahead takes it first, epoch ms; null when not queued, when nothing fits it, or when what holds that room has no prediction (absent from coordinators before it)",
    ),
  finishAt: z
    .object({ median: z.number().int(), p90: z.number().int() })
    .nullable()
    .describe('When it should end: a running job its start, a queued one its predicted start (p90: the late start plus the p90 run), plus the run time (never before now), epoch ms; null otherwise'),
  buyerAccuracy: z
    .object({
      runs: z.number().int().describe("The buyer's runs that had a prediction before they ended"),
      medianErrorRatio: z.number().nullable().describe('Typical miss as a ratio (1.25: predictions were typically 25% off either way); null with no runs'),
      p90Coverage: z.number().nullable().describe('Share of those runs that ended within the predicted p90 (0.9 when calibrated); null with no runs'),
    })
    .describe("How this coordinator's predictions fared for the job's buyer (since the coordinator process started)"),
});
export type RunPrediction = z.infer<typeof RunPrediction>;
