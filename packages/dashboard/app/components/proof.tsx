/** A node's proof of hardware (the timed, checked challenge) and trust tier, worded as TRUST.md allows. */
import type { NodeView } from '@gpux/protocol';
import { dateTime } from '../lib/format.js';
import { Facts } from './bits.js';

/** What the nodes table shows: the class proven, else the proof's state. */
export function provenLabel(n: NodeView): string {
  const p = n.proof;
  if (!p) return '—';
  return p.state === 'proven' ? (p.provenClass ?? 'proven') : p.state;
}

const STATE_TEXT: Record<NonNullable<NodeView['proof']>['state'], string> = {
  proven: 'Proven',
  challenging: 'Challenge in progress: no market job until it passes',
  unproven: 'Not proven yet: the challenge is issued at registration',
  failed: 'Failed: dispatch blocked until a challenge passes (no stake is slashed)',
  skipped: 'Skipped: this coordinator does not require the challenge (GPUX_CHALLENGE=off, the default of a private cluster); nothing about its hardware is proven',
};

const TIER_TEXT: Record<NonNullable<NodeView['tier']>, string> = {
  open: 'open — stake, the timed challenge and sampled audits',
  curated: 'curated — an operator vouches for it',
  attested: 'attested — hardware TEE evidence checked by the attestation verifier',
};

export function ProofPanel({ node }: { node: NodeView }) {
  const p = node.proof;
  if (!p) {
    return (
      <p className="muted" data-testid="proof">
        No proof of hardware: the node has never been challenged (it takes no market job while the challenge is required).
      </p>
    );
  }
  return (
    <div data-testid="proof">
      <Facts
        label="Proof of hardware"
        items={[
          ['State', <span key="s" data-testid="proof-state">{STATE_TEXT[p.state]}</span>],
          ['Class proven', p.provenClass ? <span key="c" data-testid="proof-class">{p.provenClass}</span> : null],
          ['Score', p.score !== null ? <span key="sc" data-testid="proof-score">{`${p.score.toFixed(2)}×`}</span> : null],
          ['Proven at', p.provenAt !== null ? dateTime(p.provenAt) : null],
          ['Next check by', p.nextCheckAt !== null ? dateTime(p.nextCheckAt) : null],
          ['Why blocked', p.reason ? <span key="r" data-testid="proof-reason">{p.reason}</span> : null],
          ['Trust tier', node.tier ? <span key="t" data-testid="node-tier">{TIER_TEXT[node.tier]}</span> : null],
        ]}
      />
      <p className="muted small">
        {p.state === 'proven' && p.provenClass
          ? `The node proved a GPU of class ${p.provenClass} at challenge time (timed, checked computation). The score is its measured speed over the class table (1.00× = as expected); the scheduler ranks faster nodes higher.`
          : 'A proof is a timed, checked computation: seeded matrix products whose results are checked with Freivalds’ algorithm and whose time must fit the claimed class.'}
      </p>
    </div>
  );
}
