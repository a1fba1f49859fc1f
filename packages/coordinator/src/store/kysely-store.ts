/**
 * createKyselyStore: the one Store implementation for SQLite and PostgreSQL. Dialect differences are the
 * quirk flags of context.ts; the verbs live in jobs/queue/attempts/nodes/logs/tokens/events.ts.
 */
import type { Store } from '@gpux/core';
import type { Kysely } from 'kysely';
import * as attempts from './attempts.js';
import * as blobs from './blobs.js';
import * as canaries from './canary-catalog.js';
import * as challenges from './challenges.js';
import * as cluster from './cluster.js';
import { resolveDeadlines, resolvePolicy, resolveQuirks, type StoreContext, type StorePolicies, type StoreQuirksInput } from './context.js';
import * as e2eKeys from './e2e-keys.js';
import * as enrollments from './enrollments.js';
import * as equivocations from './equivocations.js';
import { appendJobEvents, listEvents, listJobHistory, writeAttemptEvents } from './events.js';
import * as fair from './fair-claim.js';
import { listFinishedRuns } from './finished-runs.js';
import * as forwards from './forwards.js';
import * as jobBlobs from './job-blobs.js';
import * as jobs from './jobs.js';
import * as logs from './logs.js';
import { runMigrations } from './migrate.js';
import { listNodeStats } from './node-stats.js';
import * as nodes from './nodes.js';
import * as payouts from './payouts.js';
import * as peers from './peers.js';
import * as prices from './prices.js';
import * as provider from './provider.js';
import * as queue from './queue.js';
import { failQueueTimeouts } from './queue-timeout.js';
import * as reputation from './reputation.js';
import type { Database } from './schema.js';
import * as settlement from './settlement.js';
import * as stake from './stake.js';
import * as tokens from './tokens.js';
import { treasuryFlows } from './treasury-flows.js';
import * as verification from './verification.js';
import type { WalSync } from './wal-sync.js';
import * as wallet from './wallet.js';

/** `quirks`: how the dialect behaves; `policies`: the coordinator's rules (from its config), kept apart. */
export function createKyselyStore(db: Kysely<Database>, quirks: StoreQuirksInput, policies: StorePolicies = {}, relaxedDb?: Kysely<Database>, walSync?: WalSync): Store {
  const ctx: StoreContext = {
    db,
    q: resolveQuirks(quirks),
    policy: resolvePolicy(policies),
    deadlines: resolveDeadlines(policies),
    ...(policies.auditBudgetBps !== undefined && { auditBudgetBps: policies.auditBudgetBps }),
    ...(relaxedDb && { relaxedDb }),
    ...(walSync && { walSync }),
  };
  let closed: Promise<void> | undefined;
  // Idempotent: closing twice is harmless. The last WAL flush finishes before the database closes.
  return storeOver(ctx, () => {
    closed ??= (walSync?.close() ?? Promise.resolve()).then(() => Promise.all([db.destroy(), relaxedDb?.destroy()])).then(() => undefined);
    return closed;
  });
}

/** The Store over one context; a fenced view shares the connection pool (and leaves closing it to its parent). */
function storeOver(ctx: StoreContext, close: () => Promise<void>): Store {
  return {
    dialect: ctx.q.dialect,
    migrate: async () => {
      await runMigrations(ctx);
    },
    close,
    synced: () => ctx.walSync?.synced() ?? Promise.resolve(),
    acquireLease: (name, holder, now, ttlMs, epoch) => cluster.acquireLease(ctx, name, holder, now, ttlMs, epoch),
    releaseLease: (name, holder, epoch) => cluster.releaseLease(ctx, name, holder, epoch),
    getLease: (name) => cluster.getLease(ctx, name),
    fenced(lease) {
      return storeOver({ ...ctx, fence: { name: lease.name, holder: lease.holder, epoch: lease.epoch } }, async () => {}) as typeof this;
    },
    claimNonces: (items) => cluster.claimNonces(ctx, items),
    pruneNonces: (now, limit) => cluster.pruneNonces(ctx, now, limit),
    addPeer: (p) => peers.addPeer(ctx, p),
    listPeers: () => peers.listPeers(ctx),
    getPeer: (id) => peers.getPeer(ctx, id),
    findPeerByKey: (fp) => peers.findPeerByKey(ctx, fp),
    removePeer: (id) => peers.removePeer(ctx, id),
    recordPeerExchange: (id, outcome) => peers.recordPeerExchange(ctx, id, outcome),
    recordPeerSummary: (id, summary, at) => peers.recordPeerSummary(ctx, id, summary, at),
    forwardJob: (q) => forwards.forwardJob(ctx, q),
    recordForwardProgress: (q) => forwards.recordForwardProgress(ctx, q),
    finishForward: (q, decide) => forwards.finishForward(ctx, q, decide),
    getForward: (attemptId) => forwards.getForward(ctx, attemptId),
    listOpenForwards: (limit) => forwards.listOpenForwards(ctx, limit),
    listJobForwards: (jobId) => forwards.listJobForwards(ctx, jobId),
    acceptForwardedJob: (job, q) => forwards.acceptForwardedJob(ctx, job, q),
    returnPeerCredit: (peerId, asset, now) => forwards.returnPeerCredit(ctx, peerId, asset, now),
    clearingBalances: () => forwards.clearingBalances(ctx),
    forwardCounts: () => forwards.forwardCounts(ctx),

    createToken: (t) => tokens.createToken(ctx, t),
    findTokenByHash: (hash) => tokens.findTokenByHash(ctx, hash),
    countTokens: (role) => tokens.countTokens(ctx, role),
    getToken: (id) => tokens.getToken(ctx, id),
    listTokens: (q) => tokens.listTokens(ctx, q),
    revokeToken: (id, now) => tokens.revokeToken(ctx, id, now),
    createEnrollment: (e) => enrollments.createEnrollment(ctx, e),
    findEnrollmentByHash: (hash) => enrollments.findEnrollmentByHash(ctx, hash),
    getEnrollment: (id) => enrollments.getEnrollment(ctx, id),
    listEnrollments: (q) => enrollments.listEnrollments(ctx, q),
    revokeEnrollment: (id, now, removeNodes) => enrollments.revokeEnrollment(ctx, id, now, removeNodes),
    countProviderNodes: (providerId) => enrollments.countProviderNodes(ctx, providerId),
    countLiveEnrollments: (accountId, now) => enrollments.countLiveEnrollments(ctx, accountId, now),

    submitJob: (job) => jobs.submitJob(ctx, job),
    getJob: (id) => jobs.getJob(ctx, id),
    getJobs: (ids) => jobs.getJobs(ctx, ids),
    listJobs: (q) => jobs.listJobs(ctx, q),
    requestCancel: (jobId, now, graceMs) => jobs.requestCancel(ctx, jobId, now, graceMs),
    claimQueued: (now, limit) => queue.claimQueued(ctx, now, limit),
    claimQueuedFair: (now, limit, fromBuyer) => fair.claimQueuedFair(ctx, now, limit, fromBuyer),
    queueStanding: (jobId, now) => fair.queueStanding(ctx, jobId, now),
    failQueueTimeouts: (q) => failQueueTimeouts(ctx, q),
    assign: (placements, now) => queue.assign(ctx, placements, now),

    getAttempt: (id) => attempts.getAttempt(ctx, id),
    listAttempts: (jobId) => attempts.listAttempts(ctx, jobId),
    listActiveAttempts: (nodeId) => attempts.listActiveAttempts(ctx, nodeId),
    startAttempt: (attemptId, nodeId, now) => attempts.startAttempt(ctx, attemptId, nodeId, now),
    finishAttempt: (input, decide) => attempts.finishAttempt(ctx, input, decide),
    getOutputs: (attemptId) => attempts.getOutputs(ctx, attemptId),
    refuseAttempt: (input, decide) => attempts.refuseAttempt(ctx, input, decide),

    appendLogs: (jobId, attemptId, entries) => logs.appendLogs(ctx, jobId, attemptId, entries),
    readLogs: (jobId, after, limit, maxBytes) => logs.readLogs(ctx, jobId, after, limit, maxBytes),
    writeAttemptLogs: (q) => logs.writeAttemptLogs(ctx, q),
    writeAttemptEvents: (q) => writeAttemptEvents(ctx, q),
    appendJobEvents: (jobId, attemptId, events) => appendJobEvents(ctx, jobId, attemptId, events),

    registerNode: (node) => nodes.registerNode(ctx, node),
    getNode: (id) => nodes.getNode(ctx, id),
    listNodes: (q) => nodes.listNodes(ctx, q),
    providerNodes: (providerId, limit) => provider.providerNodes(ctx, providerId, limit),
    providerEarnings: (providerId) => provider.providerEarnings(ctx, providerId),
    heartbeat: (nodeId, now, leaseExpiresAt) => nodes.heartbeat(ctx, nodeId, now, leaseExpiresAt),
    setNodeAdminState: (nodeId, state, now) => nodes.setNodeAdminState(ctx, nodeId, state, now),
    setNodeTier: (nodeId, tier, now, by) => nodes.setNodeTier(ctx, nodeId, tier, now, by),
    markStaleNodesOffline: (cutoff, now) => nodes.markStaleNodesOffline(ctx, cutoff, now),
    expireLeases: (now, decide, limit) => attempts.expireLeases(ctx, now, decide, limit),
    extendActiveLeases: (minExpiresAt) => attempts.extendActiveLeases(ctx, minExpiresAt),
    listNodeStats: (since) => listNodeStats(ctx, since),
    getReputation: (nodeId) => reputation.getReputation(ctx, nodeId),
    getReputations: (nodeIds) => reputation.getReputations(ctx, nodeIds),
    listReputations: (since) => reputation.listReputations(ctx, since),

    postTransfer: (t) => wallet.postTransfer(ctx, t),
    getBalance: (account, asset) => wallet.getBalance(ctx, account, asset),
    walletHistory: (accountId, q) => wallet.walletHistory(ctx, accountId, q),
    escrowOfBuyer: (buyerId) => wallet.escrowOfBuyer(ctx, buyerId),
    listTransfers: (q) => wallet.listTransfers(ctx, q),
    jobTransfers: (jobId) => wallet.jobTransfers(ctx, jobId),
    ledgerTotals: () => wallet.ledgerTotals(ctx),
    pendingPayOf: (providerId) => wallet.pendingPayOf(ctx, providerId),
    treasuryFlows: () => treasuryFlows(ctx),
    settleRunning: (now, minIntervalMs, limit) => settlement.settleRunning(ctx, now, minIntervalMs, limit),

    requestPayout: (p) => payouts.requestPayout(ctx, p),
    completePayout: (id, reference, now) => payouts.completePayout(ctx, id, reference, now),
    rejectPayout: (id, reason, now) => payouts.rejectPayout(ctx, id, reason, now),
    getPayout: (id) => payouts.getPayout(ctx, id),
    listPayouts: (q) => payouts.listPayouts(ctx, q),

    getStake: (nodeId) => stake.getStake(ctx, nodeId),
    listStakes: () => stake.listStakes(ctx),
    addStake: (q) => stake.addStake(ctx, q),
    unbondStake: (q) => stake.unbondStake(ctx, q),
    releaseUnbonded: (now, limit) => stake.releaseUnbonded(ctx, now, limit),
    slash: (q) => stake.slash(ctx, q),
    recordEquivocation: (q) => equivocations.recordEquivocation(ctx, q),
    listEquivocations: (nodeId) => equivocations.listEquivocations(ctx, nodeId),
    getVerification: (jobId) => verification.getVerification(ctx, jobId),
    getVerifications: (jobIds) => verification.getVerifications(ctx, jobIds),
    closeVerificationWindows: (now, limit) => verification.closeVerificationWindows(ctx, now, limit),
    openDispute: (q) => verification.openDispute(ctx, q),
    listPenalties: (nodeId, q) => verification.listPenalties(ctx, nodeId, q),
    issueCanaries: (q) => canaries.issueCanaries(ctx, q),
    canaryStats: () => canaries.canaryStats(ctx),
    canaryBansSince: (since) => canaries.canaryBansSince(ctx, since),
    issueChallenges: (items, now) => challenges.issueChallenges(ctx, items, now),
    getChallenge: (id) => challenges.getChallenge(ctx, id),
    pendingChallengeOf: (nodeId) => challenges.pendingChallengeOf(ctx, nodeId),
    listChallenges: (nodeId, limit) => challenges.listChallenges(ctx, nodeId, limit),
    recordChallengeDigests: (input) => challenges.recordChallengeDigests(ctx, input),
    recordChallengeVerdict: (input) => challenges.recordChallengeVerdict(ctx, input),
    expireChallenges: (now, retryMs, limit) => challenges.expireChallenges(ctx, now, retryMs, limit),
    dueChallengeNodes: (q) => challenges.dueChallengeNodes(ctx, q),
    liveNodesOfProvider: (providerId, limit) => challenges.liveNodesOfProvider(ctx, providerId, limit),
    skipProof: (nodeId) => challenges.skipProof(ctx, nodeId),

    setAsk: (providerId, marketClass, price, now) => prices.setAsk(ctx, providerId, marketClass, price, now),
    listAsks: (providerId) => prices.listAsks(ctx, providerId),
    recordPrices: (points) => prices.recordPrices(ctx, points),
    latestPrices: () => prices.latestPrices(ctx),
    priceHistory: (q) => prices.priceHistory(ctx, q),

    listEvents: (subject, subjectId, limit) => listEvents(ctx, subject, subjectId, limit),
    listJobHistory: (jobId, q) => listJobHistory(ctx, jobId, q),
    listFinishedRuns: (after, limit) => listFinishedRuns(ctx, after, limit),
    countJobsByState: () => jobs.countJobsByState(ctx),

    beginBlobUpload: (q) => blobs.beginBlobUpload(ctx, q),
    getBlobUpload: (id) => blobs.getBlobUpload(ctx, id),
    recordBlobUploadProgress: (id, received, expiresAt) => blobs.recordBlobUploadProgress(ctx, id, received, expiresAt),
    finishBlobUpload: (id, now) => blobs.finishBlobUpload(ctx, id, now),
    deleteBlobUpload: (id) => blobs.deleteBlobUpload(ctx, id),
    getBlob: (ownerId, sha256) => blobs.getBlob(ctx, ownerId, sha256),
    touchBlob: (ownerId, sha256, now) => blobs.touchBlob(ctx, ownerId, sha256, now),
    listBlobs: (q) => blobs.listBlobs(ctx, q),
    deleteBlob: (ownerId, sha256, opts) => blobs.deleteBlob(ctx, ownerId, sha256, opts),
    blobUsage: (ownerId) => blobs.blobUsage(ctx, ownerId),
    staleBlobs: (before, limit) => blobs.staleBlobs(ctx, before, limit),
    expiredBlobUploads: (now, limit) => blobs.expiredBlobUploads(ctx, now, limit),
    blobsInUse: (sha256s) => blobs.blobsInUse(ctx, sha256s),
    beginAgentUpload: (q) => jobBlobs.beginAgentUpload(ctx, q),
    getAgentUpload: (id) => jobBlobs.getAgentUpload(ctx, id),
    finishAgentUpload: (id, now) => jobBlobs.finishAgentUpload(ctx, id, now),
    completedOutputUploads: (attemptId) => jobBlobs.completedOutputUploads(ctx, attemptId),
    latestCheckpoints: (jobIds) => jobBlobs.latestCheckpoints(ctx, jobIds),
    grantBlobHolds: (ownerId, list, now) => jobBlobs.grantBlobHolds(ctx, ownerId, list, now),
    referencedBlobHolds: (holds, now, policy) => jobBlobs.referencedBlobHolds(ctx, holds, now, policy),
    setNodeEncryptionKey: (k) => e2eKeys.setNodeEncryptionKey(ctx, k),
    nodeEncryptionKeys: (ids) => e2eKeys.nodeEncryptionKeys(ctx, ids),
    releaseDataKey: (q) => e2eKeys.releaseDataKey(ctx, q),
    setOutputKey: (q) => e2eKeys.setOutputKey(ctx, q),
    attemptKeys: (ids) => e2eKeys.attemptKeys(ctx, ids),
    attemptKeysOfJobs: (ids) => e2eKeys.attemptKeysOfJobs(ctx, ids),
    keyWaitingAttempts: (before, limit) => e2eKeys.keyWaitingAttempts(ctx, before, limit),
  };
}
