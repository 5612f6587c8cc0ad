/**
 * mediahook: the result callbacks of an asynchronous image/video generation service, both
 * sides of the wire. Everything public is exported here; `mediahook/protocol`,
 * `mediahook/receiver`, `mediahook/delivery`, `mediahook/store` and `mediahook/service` give
 * the same pieces by layer.
 *
 * @example
 * import http from 'node:http';
 * import { createReceiver, nodeHandler } from 'mediahook';
 * const receiver = createReceiver({ out: './callbacks', onSuccess: (cb) => console.log(cb.file.path) });
 * http.createServer(nodeHandler(receiver)).listen(9000);
 */

export {
  type AttemptResult,
  CallbackSender,
  type CallbackSenderOptions,
  checkWebhookUrl,
  classifyAddress,
  createGuardedAgent,
  DEFAULT_RETRY_POLICY,
  DeliveryWorker,
  type DeliveryWorkerOptions,
  DirectoryBlobStore,
  type RetryPolicy,
  type SsrfPolicy,
  SsrfRefusedError,
} from '../../server/src/delivery/index.ts';
export * from './protocol/index.ts';
export * from './receiver/index.ts';
export { apiClientError } from '../../server/src/service/api-error.ts';
export { createApiServer } from '../../server/src/service/api-http-server.ts';
export { createService, type Service, type ServiceOptions } from '../../server/src/service/service.ts';
export { openStore, PostgresStore, SqliteStore, type Store, StoreError } from '../../server/src/store/index.ts';
export { version } from './protocol/version.ts';
