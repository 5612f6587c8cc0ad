/**
 * Delivering callbacks: the sender (pooled, guarded, signed), the retry policy, the worker
 * that drains the durable outbox, the blob store of result files, and the SSRF guard.
 */
export {
  DEFAULT_BLOCKING_READ_MAX_BYTES,
  DirectoryBlobStore,
  type DirectoryBlobStoreOptions,
} from './blob-store.ts';
export {
  type AttemptResult,
  type AttemptVerdict,
  CallbackSender,
  type CallbackSenderOptions,
  CANCELLED,
  describeNetworkError,
} from './callback-sender.ts';
export { type CircuitPolicy, DEFAULT_CIRCUIT_POLICY } from '../store/index.ts';
export { DeliveryWorker, type DeliveryWorkerOptions } from './delivery-worker.ts';
export { outgoingCallbackOf } from './outgoing-callback.ts';
export { parseRetryAfter } from './retry-after.ts';
export {
  DEFAULT_RETRY_POLICY,
  DEFAULT_RETRY_SCHEDULE_MS,
  nextCallbackState,
  nextRetryDelay,
  type RetryPolicy,
} from './retry-policy.ts';
export * from './ssrf/index.ts';
