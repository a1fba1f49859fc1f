/** The route table of the /v1 API: one place that the coordinator, the OpenAPI document and the SDK share. */
import type { z } from 'zod';
import * as access from './access-api.js';
import * as agent from './agent-api.js';
import * as agentBlob from './agent-blob-api.js';
import * as blob from './blob-api.js';
import * as challenge from './challenge.js';
import * as api from './api.js';
import * as commitment from './commitment.js';
import * as identity from './coordinator-identity.js';
import * as market from './market-api.js';
import * as e2e from './e2e-api.js';
import * as federation from './federation-api.js';
import * as forwarding from './federation-jobs-api.js';
import * as node from './node.js';
import * as offers from './offers-api.js';
import * as provider from './provider-api.js';
import * as verification from './verification.js';

export type Auth = 'none' | 'buyer' | 'operator' | 'node';

export interface RouteDef {
  method: 'GET' | 'POST' | 'PUT';
  path: string; // fastify style, e.g. /v1/jobs/:id
  auth: Auth;
  summary: string;
  body?: z.ZodType;
  query?: z.ZodType;
  response: z.ZodType;
}

const r = <T extends RouteDef>(d: T) => d;

/** `buyer` routes accept operator tokens too (operators see every buyer's jobs). */
export const ROUTES = {
  submitJob: r({ method: 'POST', path: '/v1/jobs', auth: 'buyer', summary: 'Submit a job (Idempotency-Key header makes retries safe)', body: api.SubmitJobRequest, response: api.SubmitJobResponse }),
  listJobs: r({ method: 'GET', path: '/v1/jobs', auth: 'buyer', summary: 'List jobs, newest first', query: api.ListJobsQuery, response: api.ListJobsResponse }),
  getJob: r({ method: 'GET', path: '/v1/jobs/:id', auth: 'buyer', summary: 'A job with its attempts and its newest events (page older ones with eventsBefore)', query: api.GetJobQuery, response: api.GetJobResponse }),
  cancelJob: r({ method: 'POST', path: '/v1/jobs/:id/cancel', auth: 'buyer', summary: 'Cancel a job; a running attempt is stopped within one heartbeat', response: api.CancelJobResponse }),
  jobLogs: r({ method: 'GET', path: '/v1/jobs/:id/logs', auth: 'buyer', summary: 'Log entries of all attempts; long-polls with waitMs', query: api.JobLogsQuery, response: api.JobLogsResponse }),
  explainJob: r({ method: 'GET', path: '/v1/jobs/:id/explain', auth: 'buyer', summary: 'Why a pending job waits: nodes rejected per filter, queue position, what to change', response: api.ExplainJobResponse }),
  disputeJob: r({ method: 'POST', path: '/v1/jobs/:id/dispute', auth: 'buyer', summary: "Dispute an ended job's result within its dispute window: a bond is held and referee runs on independent operators decide (2 must agree)", body: verification.DisputeRequest, response: verification.DisputeResponse }),
  jobResult: r({ method: 'GET', path: '/v1/jobs/:id/result', auth: 'buyer', summary: 'Exit code and output files of the finished job', response: api.JobResultResponse }),
  releaseKey: r({ method: 'POST', path: '/v1/jobs/:id/attempts/:attemptId/key', auth: 'buyer', summary: 'Encrypted jobs: release the input data key, wrapped to the node of an assigned attempt of the job or of one of its check runs', body: e2e.ReleaseKeyRequest, response: e2e.ReleaseKeyResponse }),
  keyRequests: r({ method: 'GET', path: '/v1/jobs/:id/key-requests', auth: 'buyer', summary: "Encrypted jobs: attempts waiting for their data key (with each node's signed encryption key) and the output keys nodes announced", response: e2e.KeyRequestsResponse }),
  whoami: r({ method: 'GET', path: '/v1/whoami', auth: 'buyer', summary: 'The account behind the bearer token', response: api.WhoAmIResponse }),
  quoteJob: r({ method: 'POST', path: '/v1/jobs/quote', auth: 'buyer', summary: 'Dry run of a submit: the spec checked as submit checks it, the hold, the price range over fitting nodes, how many fit now, the expected wait; nothing is written', body: api.SubmitJobRequest, response: offers.QuoteJobResponse }),
  offers: r({ method: 'GET', path: '/v1/offers', auth: 'buyer', summary: 'What the network offers now: live nodes grouped by GPU class, GPUs, price, region, reliability and proof, cheapest first', query: offers.OffersQuery, response: offers.OffersResponse }),
  stats: r({ method: 'GET', path: '/v1/stats', auth: 'buyer', summary: 'Network totals: nodes, GPUs by class (free/busy), jobs by state, placement rate', response: api.StatsResponse }),

  listNodes: r({ method: 'GET', path: '/v1/nodes', auth: 'operator', summary: 'List nodes', query: api.ListNodesQuery, response: api.ListNodesResponse }),
  getNode: r({ method: 'GET', path: '/v1/nodes/:id', auth: 'operator', summary: 'One node', response: api.GetNodeResponse }),
  cordonNode: r({ method: 'POST', path: '/v1/nodes/:id/cordon', auth: 'operator', summary: 'Stop placing new work on the node', response: api.SetNodeAdminStateResponse }),
  uncordonNode: r({ method: 'POST', path: '/v1/nodes/:id/uncordon', auth: 'operator', summary: 'Let the node take work again', response: api.SetNodeAdminStateResponse }),
  setNodeTier: r({ method: 'POST', path: '/v1/nodes/:id/tier', auth: 'operator', summary: 'Vouch for a node (curated) or take it back (open); attested is refused: only verified evidence attests', body: node.SetNodeTierRequest, response: api.SetNodeAdminStateResponse }),
  drainNode: r({ method: 'POST', path: '/v1/nodes/:id/drain', auth: 'operator', summary: 'No new work; running attempts finish; `drained` turns true when idle', response: api.SetNodeAdminStateResponse }),
  createToken: r({ method: 'POST', path: '/v1/tokens', auth: 'operator', summary: 'Create a bearer token for a new account', body: api.CreateTokenRequest, response: api.CreateTokenResponse }),
  listTokens: r({ method: 'GET', path: '/v1/tokens', auth: 'buyer', summary: "Bearer tokens (never their secrets): your account's, or every account's for operators", query: access.ListTokensQuery, response: access.ListTokensResponse }),
  revokeToken: r({ method: 'POST', path: '/v1/tokens/:id/revoke', auth: 'buyer', summary: 'Revoke a bearer token of your account (operators: any); it is refused from the next request', response: access.RevokeTokenResponse }),
  createEnrollment: r({ method: 'POST', path: '/v1/enrollments', auth: 'buyer', summary: 'Create a node enrollment token for your account: it registers nodes and can do nothing else', body: access.CreateEnrollmentRequest, response: access.CreateEnrollmentResponse }),
  listEnrollments: r({ method: 'GET', path: '/v1/enrollments', auth: 'buyer', summary: "Enrollment tokens: your account's, or every account's for operators", query: access.ListEnrollmentsQuery, response: access.ListEnrollmentsResponse }),
  revokeEnrollment: r({ method: 'POST', path: '/v1/enrollments/:id/revoke', auth: 'buyer', summary: 'Revoke an enrollment: no new node registers with it; removeNodes also removes its nodes', body: access.RevokeEnrollmentRequest, response: access.RevokeEnrollmentResponse }),

  wallet: r({ method: 'GET', path: '/v1/wallet', auth: 'buyer', summary: 'Your balances per asset: available, in escrow, pending payout', response: market.WalletResponse }),
  walletHistory: r({ method: 'GET', path: '/v1/wallet/history', auth: 'buyer', summary: 'Your wallet statement, newest first, from the ledger postings', query: market.WalletHistoryQuery, response: market.WalletHistoryResponse }),
  deposit: r({ method: 'POST', path: '/v1/wallet/deposits', auth: 'buyer', summary: 'Record a deposit (operators, with its external reference) or mint test funds (dev networks)', body: market.DepositRequest, response: market.TransferResponse }),
  withdraw: r({ method: 'POST', path: '/v1/wallet/withdrawals', auth: 'buyer', summary: 'Withdraw through the settlement adapter: the amount leaves your wallet as a pending payout', body: market.WithdrawRequest, response: market.PayoutResponse }),
  myPayouts: r({ method: 'GET', path: '/v1/wallet/payouts', auth: 'buyer', summary: 'Your payouts, newest first', query: market.ListPayoutsQuery, response: market.ListPayoutsResponse }),
  listPayouts: r({ method: 'GET', path: '/v1/payouts', auth: 'operator', summary: 'Every payout, newest first (state=pending: the work queue of the manual adapter)', query: market.ListPayoutsQuery, response: market.ListPayoutsResponse }),
  completePayout: r({ method: 'POST', path: '/v1/payouts/:id/complete', auth: 'operator', summary: 'Manual adapter: the payout was paid outside; record its reference', body: market.CompletePayoutRequest, response: market.PayoutResponse }),
  rejectPayout: r({ method: 'POST', path: '/v1/payouts/:id/reject', auth: 'operator', summary: 'Manual adapter: the payout failed; the amount returns to the wallet', body: market.RejectPayoutRequest, response: market.PayoutResponse }),
  nodePenalties: r({ method: 'GET', path: '/v1/nodes/:id/penalties', auth: 'buyer', summary: "A node's penalties with their evidence (signed commitments); its provider or an operator", response: commitment.NodePenaltiesResponse }),
  nodeStake: r({ method: 'GET', path: '/v1/nodes/:id/stake', auth: 'buyer', summary: "A node's stake: bonded, locked by active attempts, free, unbonding (its provider or an operator)", response: market.StakeResponse }),
  addStake: r({ method: 'POST', path: '/v1/nodes/:id/stake', auth: 'buyer', summary: "Move USDC from the provider's wallet to the node's stake", body: market.StakeRequest, response: market.StakeResponse }),
  unstake: r({ method: 'POST', path: '/v1/nodes/:id/unstake', auth: 'buyer', summary: 'Unbond free stake; it returns to the wallet after the unbonding delay', body: market.StakeRequest, response: market.StakeResponse }),
  marketPrices: r({ method: 'GET', path: '/v1/market/prices', auth: 'buyer', summary: 'Index price per GPU class with its recent change, utilization, supply and demand', response: market.MarketPricesResponse }),
  priceHistory: r({ method: 'GET', path: '/v1/market/history', auth: 'buyer', summary: 'Index prices per epoch, oldest first', query: market.PriceHistoryQuery, response: market.PriceHistoryResponse }),
  providerStatus: r({ method: 'GET', path: '/v1/provider/status', auth: 'buyer', summary: 'Your provider side: your nodes (status, proof, GPUs, stake, pay), your asks, and your earnings paid and held (operators: any account with accountId)', query: provider.ProviderStatusQuery, response: provider.ProviderStatusResponse }),
  myAsks: r({ method: 'GET', path: '/v1/market/asks', auth: 'buyer', summary: 'Your asks (least you earn per GPU-hour) per class', response: market.AsksResponse }),
  setAsk: r({ method: 'POST', path: '/v1/market/asks', auth: 'buyer', summary: 'Set or remove your ask for a class; applies to all your nodes of that class', body: market.SetAskRequest, response: market.AsksResponse }),
  jobBill: r({ method: 'GET', path: '/v1/jobs/:id/bill', auth: 'buyer', summary: "The job's bill, line by line from the ledger postings", response: market.BillResponse }),
  treasury: r({ method: 'GET', path: '/v1/treasury', auth: 'operator', summary: 'Treasury balance and ledger totals per asset, with the invariant check', response: market.TreasuryResponse }),
  ledger: r({ method: 'GET', path: '/v1/ledger', auth: 'operator', summary: 'Ledger transfers with their postings, newest first', query: market.LedgerQuery, response: market.LedgerResponse }),

  createBlobUpload: r({ method: 'POST', path: '/v1/blobs/uploads', auth: 'buyer', summary: 'Start a resumable blob upload {sha256, size}; answers the blob at once when you already hold it', body: blob.CreateBlobUploadRequest, response: blob.BlobUploadResponse }),
  appendBlobUpload: r({ method: 'PUT', path: '/v1/blobs/uploads/:id', auth: 'buyer', summary: 'Append an application/octet-stream chunk at the Upload-Offset header; the last one completes the blob (sha256 checked)', response: blob.BlobUploadResponse }),
  getBlobUpload: r({ method: 'GET', path: '/v1/blobs/uploads/:id', auth: 'buyer', summary: 'Where an upload stands: resume from its offset', response: blob.BlobUploadResponse }),
  abortBlobUpload: r({ method: 'POST', path: '/v1/blobs/uploads/:id/abort', auth: 'buyer', summary: 'Drop an unfinished upload and its reservation', response: blob.AbortBlobUploadResponse }),
  listBlobs: r({ method: 'GET', path: '/v1/blobs', auth: 'buyer', summary: 'Your blobs by sha256, with your usage and quota', query: blob.ListBlobsQuery, response: blob.ListBlobsResponse }),
  getBlobInfo: r({ method: 'GET', path: '/v1/blobs/:id/info', auth: 'buyer', summary: 'One of your blobs: size and retention', response: blob.BlobView }),
  downloadBlob: r({ method: 'GET', path: '/v1/blobs/:id', auth: 'buyer', summary: 'The bytes of one of your blobs, streamed (Range supported)', response: blob.BlobBytes }),
  deleteBlob: r({ method: 'POST', path: '/v1/blobs/:id/delete', auth: 'buyer', summary: 'Stop holding a blob (frees quota); the bytes go once no account holds them', response: blob.DeleteBlobResponse }),

  coordinatorIdentity: r({ method: 'GET', path: '/v1/coordinator/identity', auth: 'none', summary: "The coordinator's signing key and its endorsement chain (agents follow a key rotation through it)", response: identity.CoordinatorIdentityResponse }),
  refuseAttempt: r({ method: 'POST', path: '/v1/agent/attempts/:id/refuse', auth: 'node', summary: 'The node refuses an assignment it could not verify; the attempt ends and the job is queued again (no penalty)', body: identity.RefuseAttemptRequest, response: identity.RefuseAttemptResponse }),
  register: r({ method: 'POST', path: '/v1/agent/register', auth: 'node', summary: 'Register or re-register a node (signed with the key in the body)', body: agent.RegisterRequest, response: agent.RegisterResponse }),
  heartbeat: r({ method: 'POST', path: '/v1/agent/heartbeat', auth: 'node', summary: 'Renew the node and its leases; returns attempts to cancel', body: agent.HeartbeatRequest, response: agent.HeartbeatResponse }),
  work: r({ method: 'GET', path: '/v1/agent/work', auth: 'node', summary: 'Long-poll for assignments', query: agent.WorkQuery, response: agent.WorkResponse }),
  workExchange: r({ method: 'POST', path: '/v1/agent/work', auth: 'node', summary: 'The work long-poll carrying the starts of assignments the agent takes up (answered at once when it carries any)', body: agent.WorkExchangeRequest, response: agent.WorkExchangeResponse }),
  startAttempt: r({ method: 'POST', path: '/v1/agent/attempts/:id/start', auth: 'node', summary: 'The attempt is running', response: agent.StartAttemptResponse }),
  attemptLogs: r({ method: 'POST', path: '/v1/agent/attempts/:id/logs', auth: 'node', summary: 'Append log entries (idempotent by seq)', body: agent.LogBatch, response: agent.LogBatchResponse }),
  attemptEvents: r({ method: 'POST', path: '/v1/agent/attempts/:id/events', auth: 'node', summary: 'Append job events (image pulls) to the job history', body: agent.AttemptEventBatch, response: agent.AttemptEventBatchResponse }),
  challengeDigests: r({ method: 'POST', path: '/v1/agent/challenges/:id/digests', auth: 'node', summary: 'Proof of hardware: the digest of every product and the timings; returns the row blocks to reveal', body: challenge.ChallengeDigestsRequest, response: challenge.ChallengeDigestsResponse }),
  challengeReveal: r({ method: 'POST', path: '/v1/agent/challenges/:id/reveal', auth: 'node', summary: 'Proof of hardware: the requested row blocks in full; returns the verdict', body: challenge.ChallengeRevealRequest, response: challenge.ChallengeVerdict }),
  attemptInput: r({ method: 'GET', path: '/v1/agent/attempts/:id/inputs/:sha256', auth: 'node', summary: "A blob input of the attempt's job, streamed (Range supported)", response: blob.BlobBytes }),
  attemptCheckpoint: r({ method: 'GET', path: '/v1/agent/attempts/:id/checkpoint', auth: 'node', summary: 'The checkpoint archive the attempt starts from (the assignment names it), streamed (Range supported)', response: blob.BlobBytes }),
  createOutputUpload: r({ method: 'POST', path: '/v1/agent/attempts/:id/outputs', auth: 'node', summary: 'Start uploading an output file of the attempt into the blob store (owned by the buyer); answers a capability token for its chunks', body: agentBlob.CreateOutputUploadRequest, response: agentBlob.AgentUploadResponse }),
  createCheckpointUpload: r({ method: 'POST', path: '/v1/agent/attempts/:id/checkpoints', auth: 'node', summary: "Start uploading a checkpoint archive of the attempt; once complete it is the job's latest checkpoint", body: agentBlob.CreateCheckpointUploadRequest, response: agentBlob.AgentUploadResponse }),
  appendAgentUpload: r({ method: 'PUT', path: '/v1/agent/uploads/:id', auth: 'none', summary: 'Append a chunk to an output or checkpoint upload (header x-gpux-upload-token, Upload-Offset)', response: blob.BlobUploadResponse }),
  getAgentUpload: r({ method: 'GET', path: '/v1/agent/uploads/:id', auth: 'none', summary: 'Where an output or checkpoint upload stands (header x-gpux-upload-token)', response: blob.BlobUploadResponse }),
  attemptKey: r({ method: 'GET', path: '/v1/agent/attempts/:id/key', auth: 'node', summary: "Encrypted jobs: the attempt's input data key, wrapped to this node's encryption key (404 KEY_NOT_RELEASED until the buyer released it)", response: e2e.AttemptKeyResponse }),
  attemptOutputKey: r({ method: 'POST', path: '/v1/agent/attempts/:id/output-key', auth: 'node', summary: "Encrypted jobs: announce the attempt's output key wrapped to the buyer, before any output or log", body: e2e.OutputKeyRequest, response: e2e.OutputKeyResponse }),
  attemptResult: r({ method: 'POST', path: '/v1/agent/attempts/:id/result', auth: 'node', summary: 'Report the signed result commitment (idempotent)', body: agent.ResultReport, response: agent.ResultResponse }),

  regionPeers: r({ method: 'GET', path: '/v1/federation/peers', auth: 'operator', summary: "This region (name, key, summary) and its peers: status, round trip, last seen, each peer's last summary", response: federation.ListPeersResponse }),
  addPeer: r({ method: 'POST', path: '/v1/federation/peers', auth: 'operator', summary: "Peer with another region's coordinator by URL and key (its fingerprint or public key); summaries are exchanged from the next pass", body: federation.AddPeerRequest, response: federation.PeerResponse }),
  removePeer: r({ method: 'POST', path: '/v1/federation/peers/:id/remove', auth: 'operator', summary: 'Stop peering: its summaries are refused from now on', response: federation.PeerResponse }),
  regionSummary: r({ method: 'GET', path: '/v1/federation/summary', auth: 'operator', summary: "This region's own summary, as peers receive it", response: federation.RegionSummary }),
  exchangeSummary: r({ method: 'POST', path: '/v1/federation/summary', auth: 'none', summary: "A peer region's signed summary (headers x-gpux-peer-key, -timestamp, -nonce, -signature by its coordinator key); answered with this region's, signed over the request's nonce", body: federation.SummaryExchange, response: federation.SummaryExchange }),
  forwardJob: r({ method: 'POST', path: '/v1/federation/jobs', auth: 'none', summary: "A peer region's signed request to run a job for it (its buyer): held on this region's credit line for the peer, idempotent by the home attempt id; answered signed", body: forwarding.ForwardJobRequest, response: forwarding.ForwardJobResponse }),
  forwardedJob: r({ method: 'GET', path: '/v1/federation/jobs/:id', auth: 'none', summary: 'A peer region asks (signed) where a job it forwarded stands: state, bill so far, log entries after a cursor; answered signed', query: forwarding.ForwardedJobQuery, response: forwarding.ForwardedJobResponse }),
  cancelForwardedJob: r({ method: 'POST', path: '/v1/federation/jobs/:id/cancel', auth: 'none', summary: 'A peer region cancels (signed) a job it forwarded here: its buyer cancelled, or it fenced the attempt; answered signed', response: forwarding.ForwardedJobResponse }),
  forwardedJobBlob: r({ method: 'GET', path: '/v1/federation/jobs/:id/blobs/:sha256', auth: 'none', summary: "A peer region asks (signed) for the bytes of an output its forwarded job's signed status lists: streamed, not signed (the home checks them against the listed size and sha256)", response: blob.BlobBytes }),
  regionBalance: r({ method: 'GET', path: '/v1/federation/balance', auth: 'operator', summary: "Inter-region clearing: what this region owes each peer (or is owed), per asset, with jobs sent, received and still open", response: forwarding.RegionBalanceResponse }),
} as const satisfies Record<string, RouteDef>;

export type RouteName = keyof typeof ROUTES;
