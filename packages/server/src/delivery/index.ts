/**
 * Delivering callbacks: the sender (pooled, guarded, signed), the retry policy, the worker
 * that drains the durable outbox, the blob store of result files, and the SSRF guard.
 */
export * from './blobs/index.ts';
export { CallbackSender, type CallbackSenderOptions, CANCELLED } from './callback-sender.ts';
export { type CircuitPolicy } from '../store/index.ts';
export { DeliveryWorker, type DeliveryWorkerOptions } from './delivery-worker.ts';
export { parseRetryAfter } from './retry-after.ts';
export {
  DEFAULT_RETRY_POLICY,
  DEFAULT_RETRY_SCHEDULE_MS,
  nextCallbackState,
  nextRetryDelay,
  type RetryPolicy,
} from './retry-policy.ts';
export * from './ssrf/index.ts';
