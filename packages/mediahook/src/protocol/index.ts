/// <reference types="node" preserve="true" />
/**
 * The callback protocol: the callback shapes, a strict streaming decoder, an encoder, media
 * sniffing and Standard Webhooks signatures. Depends on nothing else of mediahook.
 */

export { CallbackDecoder, type DecodeOptions } from './callback-decoder.ts';
export { decodeCallback } from './decode-callback.ts';
export {
  type EncodedCallback,
  encodeCallback,
  type FileSource,
  type OutgoingCallback,
  randomBoundary,
} from './callback-encoder.ts';
export {
  type Callback,
  type CallbackEvent,
  COMMON_PARTS,
  classifyPartName,
  DEFAULT_LIMITS,
  type ErrorCallback,
  extensionOf,
  FAMILIES,
  FAMILY_PARTS,
  type Family,
  familiesCarrying,
  familyMediaProblem,
  type FamilyParts,
  isFamily,
  type Limits,
  type MediaType,
  partsOf,
  type ReceivedFile,
  type SuccessCallback,
} from './callback-shapes.ts';
export { isProtocolError, PROTOCOL_ERROR_CODES, ProtocolError, type ProtocolErrorCode } from './errors.ts';
export {
  discardSink,
  type FileSink,
  type FileSinkFactory,
  type FileStart,
  type StreamSink,
  streamSink,
} from './file-sink.ts';
export { boundaryOf, parseHeaderValue } from './header-value.ts';
export { SNIFF_BYTES, sniffMediaType } from './media-sniff.ts';
export { type MultipartHandler, MultipartParser, type MultipartParserOptions } from './multipart-parser.ts';
export {
  BodySigner,
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_HEADERS,
  SignatureVerifier,
  secretKey,
  signBody,
  type VerifyOptions,
} from './signature.ts';
export { parseTimeGen } from './time-gen.ts';
export { uuidv7 } from './uuidv7.ts';
export { userAgent, version } from './version.ts';
