/**
 * Trust policy (issue 11): the adaptive audit rate (first 10 audited, then max(floor, 1/passes), a failure
 * resets), non-deterministic jobs never re-executed, and auditor choice (independent, uniform, unpredictable).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  AUDIT_FLOOR,
  type AuditCandidate,
  auditDecision,
  auditProbability,
  chooseAuditor,
  emptyAuditHistory,
  FIRST_AUDITS,
  recordAuditOutcome,
  type Random,
  seededRandom,
  type TrustTier,
} from '../src/index.js';

const fixed = (v: number): Random => ({ next: () => v, bytes: (n) => new Uint8Array(n) });
const tiers: TrustTier[] = ['open', 'attested', 'curated'];

describe('adaptive audit rate', () => {
  it('audits every job until 10 passes in a row, without a draw', () => {
    let h = emptyAuditHistory();
    for (let i = 0; i < FIRST_AUDITS; i++) {
      const d = auditDecision(h, 'open', fixed(0.999));
      assert.deepEqual(d, { audit: true, p: 1, draw: null, reason: 'first-audits' });
      h = recordAuditOutcome(h, true);
    }
    const d = auditDecision(h, 'open', fixed(0.5));
    assert.equal(d.p, 0.1);
    assert.equal(d.draw, 0.5);
    assert.equal(d.audit, false);
    assert.equal(d.reason, 'sampled-out');
    assert.equal(auditDecision(h, 'open', fixed(0.05)).audit, true);
  });

  it('decays as 1/passes to the tier floor (attested 5%, curated 2%)', () => {
    assert.equal(auditProbability({ consecutivePasses: 10 }, 'attested'), 0.1);
    assert.equal(auditProbability({ consecutivePasses: 16 }, 'attested'), 1 / 16);
    assert.equal(auditProbability({ consecutivePasses: 1000 }, 'attested'), 0.05);
    assert.equal(auditProbability({ consecutivePasses: 1000 }, 'curated'), 0.02);
    assert.equal(auditProbability({ consecutivePasses: 9 }, 'curated'), 1);
  });

  it('never re-executes a non-deterministic job, and says so', () => {
    const d = auditDecision(emptyAuditHistory(), 'open', fixed(0), { deterministic: false });
    assert.deepEqual(d, { audit: false, p: 0, draw: null, reason: 'not-deterministic' });
  });

  it('property: p is 1 for the first 10, never below the floor after, and a failure resets to 1', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { maxLength: 200 }), fc.constantFrom(...tiers), (outcomes, tier) => {
        let h = emptyAuditHistory();
        for (const passed of outcomes) {
          h = recordAuditOutcome(h, passed);
          const p = auditProbability(h, tier);
          if (!passed) assert.equal(p, 1, 'a failure resets to audit-everything');
          if (h.consecutivePasses < FIRST_AUDITS) assert.equal(p, 1);
          else assert.ok(p >= AUDIT_FLOOR[tier] && p <= 0.1 + 1e-12, `p ${p}`);
        }
      }),
    );
  });

  it('property: audit iff draw < p, and the draw is the one returned', () => {
    fc.assert(
      fc.property(fc.nat(500), fc.double({ min: 0, max: 0.999999, noNaN: true }), fc.constantFrom(...tiers), (passes, v, tier) => {
        const d = auditDecision({ consecutivePasses: passes }, tier, fixed(v));
        if (d.draw === null) assert.equal(d.audit, true);
        else assert.equal(d.audit, v < d.p);
      }),
    );
  });
});

describe('auditor choice', () => {
  const fleet: AuditCandidate[] = Array.from({ length: 50 }, (_, i) => ({ nodeId: `n${i}`, operatorId: `op${Math.floor(i / 5)}` }));

  it('never picks the executor, its operator, or a known colluding operator', () => {
    fc.assert(
      fc.property(fc.nat(49), fc.integer({ min: 1, max: 1e9 }), (i, seed) => {
        const exec = fleet[i] as AuditCandidate;
        const colluding = new Set([`op${(Math.floor(i / 5) + 1) % 10}`]);
        const a = chooseAuditor(fleet, { nodes: [exec], colludingOperators: colluding }, seededRandom(seed));
        assert.ok(a);
        assert.notEqual(a.operatorId, exec.operatorId);
        assert.ok(!colluding.has(a.operatorId));
      }),
    );
  });

  it('a referee is independent of both the executor and the auditor', () => {
    const r = chooseAuditor(fleet, { nodes: [fleet[0] as AuditCandidate, fleet[5] as AuditCandidate] }, seededRandom(3));
    assert.ok(r && r.operatorId !== 'op0' && r.operatorId !== 'op1');
  });

  it('returns null when nobody is independent, and finds the only eligible node through the fallback scan', () => {
    const one = fleet.slice(0, 5);
    assert.equal(chooseAuditor(one, { nodes: [one[0] as AuditCandidate] }, seededRandom(1)), null);
    const skew = [...fleet.slice(0, 5).flatMap((c) => Array(40).fill(c)), fleet[49] as AuditCandidate];
    assert.equal(chooseAuditor(skew, { nodes: [fleet[0] as AuditCandidate] }, fixed(0))?.nodeId, 'n49');
  });

  it('spreads its choice over every eligible node (the executor cannot predict it)', () => {
    const rnd = seededRandom(7);
    const seen = new Map<string, number>();
    for (let k = 0; k < 9000; k++) {
      const a = chooseAuditor(fleet, { nodes: [fleet[0] as AuditCandidate] }, rnd) as AuditCandidate;
      seen.set(a.nodeId, (seen.get(a.nodeId) ?? 0) + 1);
    }
    assert.equal(seen.size, 45);
    for (const n of seen.values()) assert.ok(n > 100 && n < 300, `count ${n} (expected ~200)`);
  });
});

describe('audit rate options', () => {
  it('takes floors and the first-audits count from config, and refuses a floor outside (0, 1]', () => {
    const floors = { open: 0.2, attested: 0.1, curated: 0.05 };
    assert.equal(auditProbability({ consecutivePasses: 5 }, 'open', { firstAudits: 5, floors }), 0.2);
    assert.equal(auditProbability({ consecutivePasses: 4 }, 'open', { firstAudits: 5, floors }), 1);
    assert.throws(() => auditProbability({ consecutivePasses: 50 }, 'open', { floors: { ...floors, open: 0 } }), /audit floor for open/);
    assert.throws(() => auditProbability({ consecutivePasses: 50 }, 'open', { floors: { ...floors, open: Number.NaN } }), /audit floor/);
  });
});
