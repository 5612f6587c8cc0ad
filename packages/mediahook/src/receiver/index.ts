/**
 * Receiving callbacks: the adapter-independent core, the disk sink, receipts for idempotency,
 * and adapters for node:http, Express, Fastify, Hono and Web `Request → Response` runtimes.
 */
export { deferContinue } from './adapters/expect-continue.ts';
export { expressHandler } from './adapters/express.ts';
export { fastifyReceiver } from './adapters/fastify.ts';
export { allowHalfOpenAnswers } from './adapters/half-close.ts';
export { honoHandler } from './adapters/hono.ts';
export { type NodeHandlerOptions, nodeHandler } from './adapters/node-http.ts';
export { webHandler } from './adapters/web.ts';
export { allowedHostsOf, classifyHost, hostAllowed, hostHint, oncePerHost } from './host-check.ts';
export { allowedOriginsOf, crossOriginRefusal, originAllowed, originOf } from './origin-check.ts';
export { parseMode } from './file-modes.ts';
export { DirectoryReceiptStore } from './directory-receipt-store.ts';
export { DiskSink } from './disk-sink.ts';
export { MemoryReceiptStore, type Receipt, type ReceiptClaims, type ReceiptStore } from './receipt-store.ts';
export {
  createReceiver,
  fileNameFor,
  RECEIPTS_FOLDER,
  type ReceivedSuccess,
  type Receiver,
  type ReceiverOptions,
  type ReceiverOutcome,
} from './receiver.ts';
