/**
 * A job's bill, read back from the ledger: every posting of the job's transfers except the escrow's own leg,
 * signed from the buyer's side (money into the buyer's wallet +, money to providers and the treasury −,
 * money into escrow −), with the totals. held − charged − refunded = still in escrow, always.
 */
import { ACCOUNTS } from '@gpux/core';
import type { BillLine, BillResponse } from '@gpux/protocol';
import type { Principal } from '../http/bearer-auth.js';
import type { Runtime } from '../runtime.js';
import { visibleJob } from './jobs.js';

export async function jobBill(rt: Runtime, p: Principal, id: string): Promise<BillResponse> {
  const job = await visibleJob(rt, p, id);
  const asset = job.payment?.asset ?? job.spec.asset ?? 'usdc';
  const escrow = ACCOUNTS.escrow(id);
  const buyer = ACCOUNTS.wallet(job.buyerId);
  const lines: BillLine[] = [];
  const sum = { held: 0, toProviders: 0, fee: 0, refunded: 0 };
  for (const t of await rt.store.jobTransfers(id)) {
    for (const post of t.postings) {
      if (post.account === escrow || post.asset !== asset) continue;
      const fromBuyer = post.account === buyer ? post.amount : -post.amount;
      lines.push({ at: t.at, kind: t.kind, transferId: t.id, attemptId: t.attemptId, nodeId: t.nodeId, account: post.account, amount: fromBuyer, memo: t.memo });
      if (t.kind === 'escrow.hold' || t.kind === 'escrow.topup') sum.held += -fromBuyer;
      else if (t.kind === 'escrow.release') sum.refunded += fromBuyer;
      else if (t.kind === 'settlement') {
        if (post.account === ACCOUNTS.treasury) sum.fee += post.amount;
        else sum.toProviders += post.amount;
      }
    }
  }
  return {
    jobId: id,
    asset,
    market: job.payment !== null,
    capPerUnitHour: job.payment?.capPerUnitHour ?? 0,
    held: sum.held,
    charged: sum.toProviders + sum.fee,
    toProviders: sum.toProviders,
    fee: sum.fee,
    refunded: sum.refunded,
    inEscrow: await rt.store.getBalance(escrow, asset),
    lines,
  };
}
