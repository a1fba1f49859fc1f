/**
 * Verification in the dashboard (issue 11): a job's honest label (TRUST.md wording, as the coordinator
 * states it: audited with probability p, backed by stake, disputable for a window) and a node's reputation.
 * The label is a word on a badge, never a bare "verified": the summary next to it says what was checked.
 */
import type { NodeView, VerificationView } from '@gpux/protocol';
import { Facts } from './bits.js';
import { dateTime, money } from '../lib/format.js';

/** The badge colour of each label: green only where a check agreed, red where a result was found wrong. */
const TONE: Record<VerificationView['label'], string> = {
  'audited-passed': 'st-succeeded',
  'replicated-agreed': 'st-succeeded',
  'dispute-rejected': 'st-succeeded',
  'audit-pending': 'st-running',
  'replica-pending': 'st-running',
  disputed: 'st-running',
  'sampled-out': 'st-queued',
  unaudited: 'st-queued',
  'not-verifiable': 'st-queued',
  'wrong-result': 'st-failed',
};

/** Styled like a state badge but its own class, so a row's state badge stays the one `.badge`. */
export function VerificationBadge({ v }: { v: VerificationView }) {
  return (
    <span className={`vlabel ${TONE[v.label]}`} data-label={v.label}>
      {v.label}
    </span>
  );
}

const pct = (p: number) => `${Math.round(p * 1000) / 10}%`;

export function VerificationPanel({ v, jobId }: { v: VerificationView; jobId: string }) {
  const disputable = v.state === 'window' && !v.dispute;
  return (
    <div data-testid="verification">
      <p>
        <VerificationBadge v={v} /> <span data-testid="verification-summary">{v.summary}</span>
      </p>
      <Facts
        label="Verification"
        items={[
          ['Audit probability', `${pct(v.p)} (${v.reason}${v.draw === null ? '' : `, draw ${v.draw.toFixed(4)}`})`],
          ['Pay held until', v.resolvedAt === null ? `${dateTime(v.windowClosesAt)}, or an audit passes` : `released ${dateTime(v.resolvedAt)}`],
          ['Disputable until', disputable ? dateTime(v.windowClosesAt) : v.dispute ? 'disputed' : 'no longer'],
          ['Checks', v.checks.length ? v.checks.map((c) => `${c.kind} ${c.state}${c.agreed === null ? '' : c.agreed ? ' (agreed)' : ' (disagreed)'}`).join(', ') : 'none'],
          ['Dispute', v.dispute ? `${dateTime(v.dispute.at)}, bond ${money(v.dispute.bond, v.dispute.asset)}: ${v.dispute.reason}` : null],
          ['Verdict', v.verdict],
          ['Committed by', <span key="n" className="id">{v.nodeId}</span>],
        ]}
      />
      {disputable ? (
        <p className="muted small">
          To dispute the result, post a bond: <code>gpux job dispute {jobId} --reason TEXT</code>. Referee runs on independent operators decide (2 must agree).
        </p>
      ) : null}
    </div>
  );
}

/** A node's reputation: decayed good and bad outcomes, and the audit streak that sets its audit rate. */
export function ReputationPanel({ node }: { node: NodeView }) {
  const r = node.reputation;
  if (!r) {
    return (
      <p className="muted" data-testid="reputation">
        No outcomes yet. A new node starts at 0.5, and every job it runs is audited until it has passed 10 audits in a row.
      </p>
    );
  }
  return (
    <div data-testid="reputation">
      <Facts
        label="Reputation"
        items={[
          ['Score', <span key="s" data-testid="reputation-score">{r.score.toFixed(3)}</span>],
          ['Audits passed in a row', <span key="a" data-testid="reputation-audits">{r.auditsPassed}</span>],
          ['Good outcomes (decayed)', r.good.toFixed(2)],
          ['Bad outcomes (decayed)', r.bad.toFixed(2)],
          ['As of', dateTime(r.asOf)],
        ]}
      />
      <p className="muted small">From audits, canaries, completed jobs and lost leases, decayed over time; the scheduler prefers nodes with a higher score.</p>
    </div>
  );
}
