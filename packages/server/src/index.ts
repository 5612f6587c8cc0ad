/**
 * @mediahook/server: the generation service that sends mediahook's result callbacks, for
 * running in-process. The `mediahook serve` command is this, with flags.
 *
 * @example
 * import { builtInGenerator, createApiServer, createService, openStore } from '@mediahook/server';
 *
 * const store = openStore('./data/mediahook.sqlite');
 * await store.migrate();
 * const service = createService({ store, dataDir: './data', generator: builtInGenerator() });
 * await service.start();
 * createApiServer(service.handler).listen(8080, '127.0.0.1');
 */
export {
  blobKeyOf,
  type BlobStore,
  BlobStoreError,
  type BlobStoreErrorCode,
  checkWebhookUrl,
  classifyAddress,
  createGuardedAgent,
  createGuardedLookup,
  DirectoryBlobStore,
  findSsrfRefusal,
  openBlobStore,
  PostgresBlobStore,
  S3BlobStore,
  type SsrfPolicy,
  type SsrfRefusalCode,
  SsrfRefusedError,
} from './delivery/index.ts';
export { apiClientError } from './service/api-error.ts';
export { createApiServer } from './service/api-http-server.ts';
export {
  builtInGenerator,
  commandGenerator,
  type CommandGeneratorOptions,
  GenerationError,
  type GenerationErrorCode,
  type GenerationRequest,
  type GeneratedMedia,
  type Generator,
  limitConcurrency,
} from './service/generators/index.ts';
export { jsonLogger, type Logger } from './service/json-log.ts';
export { SubmissionError, type SubmissionErrorCode } from './service/submission/submission-error.ts';
export {
  type CallbackInput,
  submitCallback,
  type SubmitOptions,
  type SubmitResult,
} from './service/submission/submit-callback.ts';
export { createService, type Service, type ServiceOptions } from './service/service.ts';
export {
  type OperationResource,
  openStore,
  PostgresStore,
  SqliteStore,
  type Store,
  StoreError,
  type StoreErrorCode,
  type StoreOptions,
} from './store/index.ts';
