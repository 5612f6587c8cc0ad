/// <reference types="node" preserve="true" />
/**
 * mediahook: receive the result callbacks of an image/video generation service. This entry is
 * what a receiving app needs; the framework adapters are on `mediahook/express`,
 * `mediahook/fastify` and `mediahook/hono`, the wire format on `mediahook/protocol`.
 *
 * @example
 * import http from 'node:http';
 * import { createReceiver, nodeHandler } from 'mediahook';
 *
 * const receiver = createReceiver({
 *   out: './callbacks',
 *   secret: process.env.WEBHOOK_SECRET, // optional: then every callback must be signed
 *   onSuccess: (callback) => console.log(callback.id_gen, callback.file.path),
 *   onError: (callback) => console.log(callback.id_gen, 'failed:', callback.message),
 * });
 * http.createServer(nodeHandler(receiver)).listen(9000);
 */
export type { Callback, ErrorCallback, Family, Limits, MediaType } from './protocol/callback-shapes.ts';
export { ProtocolError, type ProtocolErrorCode } from './protocol/errors.ts';
export {
  type FileSink,
  type FileSinkFactory,
  type FileStart,
  type MemorySink,
  memorySink,
} from './protocol/file-sink.ts';
export { parseTimeGen } from './protocol/time-gen.ts';
export type { BodyGuardOptions } from './receiver/adapters/body-guards.ts';
export { type ContinueRoute, deferContinue } from './receiver/adapters/expect-continue.ts';
export { allowHalfOpenAnswers } from './receiver/adapters/half-close.ts';
export { type NodeHandler, type NodeHandlerOptions, nodeHandler } from './receiver/adapters/node-http.ts';
export { webHandler } from './receiver/adapters/web.ts';
export {
  MemoryReceiptStore,
  type Receipt,
  type ReceiptClaims,
  type ReceiptStore,
} from './receiver/receipt-store.ts';
export {
  createReceiver,
  type ReceivedCallback,
  type ReceivedSuccess,
  type Receiver,
  type ReceiverOptions,
  type ReceiverOutcome,
  type ReceiverRequest,
  type ReceiverResponse,
  type StoredFile,
} from './receiver/receiver.ts';
export { type ErrorBody, ReceiverError, type ReceiverErrorCode } from './receiver/receiver-error.ts';
