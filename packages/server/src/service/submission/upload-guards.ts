/**
 * The guards on a hand-in's body, the receiver's own: a `Content-Length` over the limit is
 * refused before a byte of the body is read, and a body that stalls or trickles is cut off, so
 * that a slow client holds no socket and no partial file for long.
 */
import type { IncomingMessage } from 'node:http';
import { DEFAULT_LIMITS } from 'mediahook/protocol';
import { type BodyGuardOptions, bodyGuardsOf, failableBody, watchBody } from 'mediahook/internal';
import { ApiError } from '../api-error.ts';

/** Room for the text parts and the part headers beside the file (as a receiver allows). */
const ROOM_BESIDE_FILE = 1024 * 1024;

/** The least a hand-in must bring per second over 30 s, where a receiver asks 1 KiB. */
const MIN_UPLOAD_BYTES_PER_SECOND = 64 * 1024;

export type UploadGuards = ReturnType<typeof bodyGuardsOf>;

/** The guards in force: the options given, the service's defaults for the rest. */
export function uploadGuardsOf(options: BodyGuardOptions = {}): UploadGuards {
  return bodyGuardsOf({
    ...options,
    minBytesPerSecond: options.minBytesPerSecond ?? MIN_UPLOAD_BYTES_PER_SECOND,
  });
}

/**
 * The request's body as the guards let it through. Throws `413 file_too_large` at once for a
 * declared length over the limit; the body's reads fail with `408 upload_too_slow` when it
 * stalls or trickles. Either answer closes the connection, so the rest is never read.
 *
 * @example
 * const body = guardedUpload(req, { guards: uploadGuardsOf() });
 * for await (const chunk of body) parser.write(chunk);
 */
export function guardedUpload(
  req: IncomingMessage,
  options: { maxFileBytes?: number | undefined; guards: UploadGuards },
): AsyncIterable<Uint8Array> {
  const limit = (options.maxFileBytes ?? DEFAULT_LIMITS.fileBytes) + ROOM_BESIDE_FILE;
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) {
    throw new ApiError(413, 'file_too_large', `the body is ${declared} bytes; at most ${limit} are taken`, {
      connection: 'close',
    });
  }
  return failableBody(req as AsyncIterable<Uint8Array>, (fail) =>
    watchBody(req, options.guards, (error) =>
      fail(new ApiError(408, 'upload_too_slow', error.message, { connection: 'close' })),
    ),
  );
}
