/** The sample job `gpux dev` submits: CPU-only shell, one input, one line of stdout, one output file. */
import type { JobSpecInput } from '@gpux/protocol';

/** Label of the dev network's own node, so the sample never lands on a simulated node. */
export const DEV_LOCAL_LABEL = 'gpux.dev/local';

export const SAMPLE_OUTPUT = 'hello.txt';

export function sampleJobSpec(): JobSpecInput {
  return {
    name: 'gpux-dev-sample',
    image: 'busybox:1.36',
    command: ['sh', '-c'],
    args: [`echo "hello from gpux job $GPUX_JOB_ID"; cat "$GPUX_INPUTS/greeting.txt" > "$GPUX_OUTPUTS/${SAMPLE_OUTPUT}"; echo "wrote ${SAMPLE_OUTPUT}" >&2`],
    resources: { gpu: { count: 0 } },
    inputs: [{ path: 'greeting.txt', content: 'hello, world\n' }],
    timeoutSeconds: 60,
    maxRetries: 1,
    constraints: { nodeLabels: { [DEV_LOCAL_LABEL]: 'true' } },
  };
}
