import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import {
  boundaryOf,
  type Callback,
  CallbackDecoder,
  DEFAULT_LIMITS,
  extensionOf,
  type FileSink,
  type FileSinkFactory,
  type Limits,
  ProtocolError,
  SignatureVerifier,
  secretKey,
} from '../protocol/index.ts';
import { claimSettingsOf, underClaim } from './cross-process-claim.ts';
import { DirectoryReceiptStore } from './directory-receipt-store.ts';
import { DiskSink, sweepStaleTemporaryFiles } from './disk-sink.ts';
import { fileModesOf, makeDirectorySync } from './file-modes.ts';
import { allowedOriginsOf, crossOriginRefusal } from './origin-check.ts';
import type { Receipt, ReceiptStore } from './receipt-store.ts';
import { headersOf, jsonAnswer, report, reportHandlerError } from './receiver-answer.ts';
import { errorBodyOf, ReceiverError, statusOf } from './receiver-error.ts';
import {
  checkContentEncoding,
  checkTransferEncoding,
  feed,
  refusalOfSigned,
  signatureFirst,
} from './request-body.ts';
import type {
  ReceivedCallback,
  ReceiverOptions,
  ReceiverRequest,
  ReceiverResponse,
} from './receiver-types.ts';

export type {
  ReceivedCallback,
  ReceivedSuccess,
  ReceiverOptions,
  ReceiverOutcome,
  ReceiverRequest,
  ReceiverResponse,
  StoredFile,
} from './receiver-types.ts';

/** The adapter-independent core: `handle()` turns a request into a 200, 405 or 500 answer. */
export interface Receiver {
  handle(request: ReceiverRequest): Promise<ReceiverResponse>;
  readonly store: ReceiptStore;
  readonly out: string;
  close(): Promise<void>;
}

/** The folder in `out` that holds the default receipt store. */
export const RECEIPTS_FOLDER = '.mediahook';

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** A file name for an `id_gen`: itself when harmless, else `_` and its SHA-256 (never a path). */
export function fileNameFor(idGen: string): string {
  if (SAFE_NAME.test(idGen) && !idGen.includes('..')) return idGen;
  return `_${createHash('sha256').update(idGen, 'utf8').digest('hex')}`;
}

function receiptOf(callback: ReceivedCallback): Receipt {
  const success = callback.event === 'success' ? callback.file : null;
  return {
    id_gen: callback.id_gen,
    event: callback.event,
    family: callback.family,
    status: callback.status,
    time_gen: callback.time_gen,
    message: callback.event === 'error' ? callback.message : null,
    file_path: success?.path ?? null,
    media_type: success?.mediaType ?? null,
    bytes: success?.bytes ?? null,
    sha256: success?.sha256 ?? null,
    received_at: new Date().toISOString(),
  };
}

/**
 * The request's signature, its headers checked (present, well formed, fresh: else a
 * `bad_signature` is thrown); null without secrets.
 */
function verifierOf(
  request: ReceiverRequest,
  secrets: readonly string[],
  toleranceSeconds: number | undefined,
): SignatureVerifier | null {
  if (secrets.length === 0) return null;
  return new SignatureVerifier(secrets, (name) => request.header(name), { toleranceSeconds });
}

/**
 * What an adapter's failure means for the sender. A body parser in front of the receiver reads
 * JSON or a form that was never a callback: that body is not multipart, which says more than
 * that a parser read it first; but a receiver with a secret tells an unsigned sender only that.
 */
function failureOf(
  request: ReceiverRequest,
  secrets: readonly string[],
  toleranceSeconds: number | undefined,
): unknown {
  const { failure } = request;
  if (failure instanceof ReceiverError && failure.code === 'body_consumed') {
    // Authentication first here too: an unsigned or stale request learns only that, whatever
    // read its body. Whether a signature holds can no longer be told without its bytes.
    try {
      verifierOf(request, secrets, toleranceSeconds);
    } catch (error) {
      return error;
    }
    const framing = boundaryOf(request.header('content-type'));
    if ('code' in framing && framing.code === 'not_multipart') {
      return new ProtocolError('not_multipart', framing.error);
    }
  }
  return failure;
}

/** A receiver's options, resolved once, and its state: what each step below reads. */
interface ReceiverContext {
  readonly options: ReceiverOptions;
  readonly out: string;
  readonly limits: Limits;
  readonly maxBodyBytes: number;
  readonly secrets: readonly string[];
  readonly origins: ReturnType<typeof allowedOriginsOf>;
  readonly modes: ReturnType<typeof fileModesOf>;
  readonly claim: ReturnType<typeof claimSettingsOf>;
  readonly store: ReceiptStore;
  /**
   * The callbacks being processed, by id_gen, each with the wake-ups of the copies waiting for
   * it; never the work's promise, which kept whole requests alive (docs/benchmarks.md).
   */
  readonly inflight: Map<string, (() => void)[]>;
}

/**
 * Creates a receiver: strict decoding, optional signature check, files stored atomically,
 * idempotency by `id_gen`, your handlers called once per callback. Plug it into a server with an
 * adapter (`nodeHandler`, `webHandler`, `fastifyReceiver`, `honoHandler`).
 *
 * @example
 * const receiver = createReceiver({
 *   out: './callbacks',
 *   secret: process.env.WEBHOOK_SECRET,
 *   onSuccess: (cb) => console.log(cb.id_gen, cb.file.path),
 *   onError: (cb) => console.log(cb.id_gen, cb.message),
 * });
 * http.createServer(nodeHandler(receiver)).listen(9000);
 */
export function createReceiver(options: ReceiverOptions = {}): Receiver {
  const out = resolve(options.out ?? 'callbacks');
  const limits: Limits = { ...DEFAULT_LIMITS, ...options.limits };
  const secrets =
    options.secret === undefined
      ? []
      : typeof options.secret === 'string'
        ? [options.secret]
        : options.secret;
  // A mistyped secret fails here, at start-up, rather than as an internal_error on every
  // signed callback; checked before the receipt store is opened, so nothing is left running.
  for (const secret of secrets) secretKey(secret);
  const origins = allowedOriginsOf(options.allowedOrigins);
  const modes = fileModesOf(options);
  const claim = claimSettingsOf(options);
  // Made here with its mode, before the receipts' folder inside it would make it with the umask's.
  if (!options.store) makeDirectorySync(out, modes);
  const store = options.store ?? new DirectoryReceiptStore(join(out, RECEIPTS_FOLDER));
  const context: ReceiverContext = {
    options,
    out,
    limits,
    maxBodyBytes: options.maxBodyBytes ?? limits.fileBytes + 1024 * 1024,
    secrets,
    origins,
    modes,
    claim,
    store,
    inflight: new Map(),
  };
  const sweeper = options.sink ? null : sweepStaleTemporaryFiles(out);
  return {
    store,
    out,
    async close() {
      if (sweeper) clearInterval(sweeper);
      await store.close();
    },
    handle: (request) => handleRequest(context, request),
  };
}

/** One request, start to answer: decode, accept (once per id_gen), store, report. */
async function handleRequest(context: ReceiverContext, request: ReceiverRequest): Promise<ReceiverResponse> {
  const { options, secrets } = context;
  const started = performance.now();
  const receivedAt = Date.now();
  const sinks: DiskSink[] = [];
  let callback: ReceivedCallback | null = null;
  let receipt: Receipt | null = null;
  try {
    if (request.failure !== undefined) throw failureOf(request, secrets, options.toleranceSeconds);
    if (request.method !== undefined && request.method !== 'POST') {
      throw new ReceiverError('method_not_allowed', `callbacks are POSTed, not ${request.method}`);
    }
    // Before the signature: a page in a browser is refused whatever it sent.
    const crossOrigin = crossOriginRefusal(request.header('origin'), context.origins);
    if (crossOrigin) throw crossOrigin;
    const decoded = await decodeRequest(context, request, sinks);
    const result = await acceptOnce(context, decoded, sinks[0], request);
    const duplicate = 'duplicateOf' in result;
    if ('duplicateOf' in result) {
      receipt = result.duplicateOf;
      callback =
        decoded.event === 'success' ? { ...decoded, file: { ...decoded.file, path: null } } : decoded;
    } else {
      callback = result;
    }
    report(options, () => ({
      verdict: duplicate ? 'duplicate' : 'accepted',
      callback,
      receipt,
      error: null,
      receivedAt: new Date(receivedAt).toISOString(),
      durationMs: performance.now() - started,
      headers: headersOf(request),
    }));
    return jsonAnswer(200, { received: true, id_gen: decoded.id_gen, duplicate });
  } catch (error) {
    await Promise.all(sinks.map((sink) => sink.abort()));
    const body = errorBodyOf(error);
    report(options, () => ({
      verdict: 'rejected',
      callback,
      receipt: null,
      error: body.error,
      receivedAt: new Date(receivedAt).toISOString(),
      durationMs: performance.now() - started,
      headers: headersOf(request),
    }));
    return jsonAnswer(statusOf(error), body, true);
  }
}

/**
 * The refusal of a body over the bound. Over the default bound the texts and headers, within
 * their limits, cannot make up the difference: the file is too large, and is named so whether
 * the size was told, known or found while reading, however the body came in chunks.
 */
function overBound(context: ReceiverContext, size: string): ProtocolError {
  return context.options.maxBodyBytes === undefined
    ? new ProtocolError(
        'file_too_large',
        `the body is ${size}: larger than any callback whose file is within the ${context.limits.fileBytes}-byte limit`,
      )
    : new ProtocolError(
        'body_too_large',
        `the body is ${size}; at most ${context.maxBodyBytes} are accepted`,
      );
}

/** Step 1: the request's body as a callback, its signature verified; its file in a sink. */
async function decodeRequest(
  context: ReceiverContext,
  request: ReceiverRequest,
  sinks: DiskSink[],
): Promise<Callback<FileSink>> {
  const { options, maxBodyBytes } = context;
  // The signature's headers first: a sender that is not signed or is stale learns only that,
  // not which of the body's limits or encodings it would have passed.
  const verifier = verifierOf(request, context.secrets, options.toleranceSeconds);
  const declared = request.header('content-length');
  // Also a hint for hashing: one that is no size (NaN) counts as unknown there.
  const declaredBytes = declared === undefined ? undefined : Number(declared);
  const sink: FileSinkFactory =
    options.sink ??
    (() => {
      const disk = new DiskSink(context.out, context.modes);
      sinks.push(disk);
      return disk;
    });
  const body = request.body;
  let decoder: CallbackDecoder;
  try {
    checkContentEncoding(request.header('content-encoding'));
    checkTransferEncoding(request.header('transfer-encoding'));
    decoder = new CallbackDecoder(request.header('content-type'), {
      limits: context.limits,
      family: options.family,
      sink,
      bodyBytes: body instanceof Uint8Array ? body.length : declaredBytes,
    });
  } catch (error) {
    throw verifier ? await refusalOfSigned(body, verifier, maxBodyBytes, error) : error;
  }
  try {
    // After the Content-Type: a large body that is not a callback at all is told so.
    const knownBytes = body instanceof Uint8Array ? body.length : declaredBytes;
    if (knownBytes !== undefined && knownBytes > maxBodyBytes)
      throw overBound(context, `${knownBytes} bytes`);
    await feed(body, decoder, verifier, maxBodyBytes, () => overBound(context, `over ${maxBodyBytes} bytes`));
    const callback = await decoder.end().catch((error: unknown) => {
      throw signatureFirst(error, verifier);
    });
    if (verifier) {
      verifier.verify();
      if (verifier.id !== callback.id_gen) {
        throw new ProtocolError('bad_signature', 'the webhook-id header does not match id_gen');
      }
    }
    return callback;
  } catch (error) {
    await decoder.abort(error);
    throw error;
  }
}

/**
 * Step 2: stores the callback unless its id_gen was received before (then the earlier
 * receipt, as `duplicateOf`). Copies arriving together wait for the first one's outcome.
 */
async function acceptOnce(
  context: ReceiverContext,
  callback: Callback<FileSink>,
  disk: DiskSink | undefined,
  request: ReceiverRequest,
): Promise<ReceivedCallback | { duplicateOf: Receipt }> {
  const { inflight } = context;
  const id = callback.id_gen;
  // Concurrent repeats: wait for the one in flight, then look again.
  for (let waiters = inflight.get(id); waiters; waiters = inflight.get(id)) {
    const queue = waiters;
    await new Promise<void>((wake) => queue.push(wake));
  }
  // Claimed before the store is asked: with an await between the look-up and the claim, copies
  // arriving together would all find no receipt and all be processed.
  const waiters: (() => void)[] = [];
  inflight.set(id, waiters);
  try {
    const result = await underClaim(context.store, id, context.claim, request, () =>
      storeCallback(context, callback, disk),
    );
    if ('duplicateOf' in result) await disk?.abort();
    return result;
  } finally {
    inflight.delete(id);
    for (const wake of waiters) wake();
  }
}

/** Step 3: the file in place, the handler called, the receipt written, in that order. */
async function storeCallback(
  context: ReceiverContext,
  callback: Callback<FileSink>,
  disk: DiskSink | undefined,
): Promise<ReceivedCallback> {
  const { options } = context;
  let received: ReceivedCallback;
  if (callback.event === 'success') {
    const path = disk
      ? join(context.out, `${fileNameFor(callback.id_gen)}${extensionOf(callback.file.mediaType)}`)
      : null;
    if (disk && path) await disk.commit(path);
    received = { ...callback, file: { ...callback.file, path } };
  } else {
    received = callback;
  }
  try {
    if (received.event === 'success') await options.onSuccess?.(received);
    else await options.onError?.(received);
  } catch (error) {
    await disk?.abort();
    reportHandlerError(options, error, received);
    throw new ReceiverError(
      'handler_failed',
      `the handler failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  await context.store.add(receiptOf(received));
  return received;
}
