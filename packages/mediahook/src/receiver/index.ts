/**
 * Receiving callbacks: the adapter-independent core, the disk sink, receipts for idempotency,
 * and adapters for node:http, Express, Fastify, Hono and Web `Request → Response` runtimes.
 */
export { type ContinueRoute, deferContinue } from './adapters/expect-continue.ts';
export { type ExpressHandler, expressHandler } from './adapters/express.ts';
export { type FastifyReceiverOptions, fastifyReceiver } from './adapters/fastify.ts';
export { allowHalfOpenAnswers } from './adapters/half-close.ts';
export { honoHandler } from './adapters/hono.ts';
export {
  type NodeHandler,
  type NodeHandlerOptions,
  nodeHandler,
  sendNodeResponse,
} from './adapters/node-http.ts';
export { webHandler, type WebHandlerOptions } from './adapters/web.ts';
export { type HostGuardOptions } from './adapters/host-guard.ts';
export {
  allowedHostsOf,
  type AllowedHosts,
  classifyHost,
  hostAllowed,
  hostHint,
  type HostName,
  hostNotAllowedMessage,
  oncePerHost,
} from './host-check.ts';
export { allowedOriginsOf, crossOriginRefusal, originAllowed, originOf } from './origin-check.ts';
export { checkMode, type FileModes, fileModesOf, parseMode } from './file-modes.ts';
export { type BodyGuardOptions } from './adapters/body-guards.ts';
export { DirectoryReceiptStore } from './directory-receipt-store.ts';
export { DiskSink } from './disk-sink.ts';
export { MemoryReceiptStore, type Receipt, type ReceiptClaims, type ReceiptStore } from './receipt-store.ts';
export {
  createReceiver,
  fileNameFor,
  type ReceivedCallback,
  type ReceivedSuccess,
  type Receiver,
  type ReceiverOptions,
  type ReceiverOutcome,
  type ReceiverRequest,
  type ReceiverResponse,
  type StoredFile,
} from './receiver.ts';
export { type ErrorBody, errorBodyOf, ReceiverError, type ReceiverErrorCode } from './receiver-error.ts';
