import { type CallbackDecoder, ProtocolError, type SignatureVerifier } from '../protocol/index.ts';
import type { ReceiverRequest } from './receiver-types.ts';
import { ReceiverError } from './receiver-error.ts';

/**
 * A compressed body is refused by name: its bytes are not the multipart body (nor what a
 * signature covers), and the decoder would only report a missing delimiter.
 */
export function checkContentEncoding(encoding: string | undefined): void {
  if (encoding === undefined) return;
  if (codingsOf(encoding).every((coding) => coding === 'identity' || coding === '')) return;
  throw new ReceiverError(
    'unsupported_encoding',
    `the body has Content-Encoding ${encoding}; a callback is accepted only as the multipart bytes themselves`,
  );
}

/**
 * The same for a transfer coding: Node's parser undoes `chunked` only, so a body sent with
 * `Transfer-Encoding: gzip, chunked` would reach the decoder still compressed.
 */
export function checkTransferEncoding(encoding: string | undefined): void {
  if (encoding === undefined) return;
  if (codingsOf(encoding).every((coding) => coding === 'chunked' || coding === '')) return;
  throw new ReceiverError(
    'unsupported_encoding',
    `the body has Transfer-Encoding ${encoding}; only chunked is read`,
  );
}

function codingsOf(header: string): string[] {
  return header.split(',').map((coding) => coding.trim().toLowerCase());
}

/**
 * Reads the body into the decoder (and the verifier). A stream is bounded in size as it is
 * read (`tooLarge` past it); a whole body's size is known before, and checked by the caller
 * with the declared length. When the decoder refuses a signed body, the rest of it still goes
 * through the verifier (within the size bound): a body that is not what was signed is
 * `bad_signature` before anything is said about its content, as Standard Webhooks verifies
 * before it parses. A body that cannot be read whole keeps the decoder's refusal.
 */
export async function feed(
  body: ReceiverRequest['body'],
  decoder: CallbackDecoder,
  verifier: SignatureVerifier | null,
  maxBodyBytes: number,
  tooLarge: () => ProtocolError,
): Promise<void> {
  if (body === null) return;
  if (body instanceof Uint8Array) {
    verifier?.update(body);
    try {
      await decoder.write(body);
    } catch (error) {
      throw signatureFirst(error, verifier);
    }
    return;
  }
  const chunks = body[Symbol.asyncIterator]();
  let total = 0;
  for (;;) {
    const next = await nextChunk(chunks);
    if (next.done) return;
    const chunk = next.value;
    total += chunk.length;
    if (total > maxBodyBytes) throw tooLarge();
    verifier?.update(chunk);
    try {
      const pending = decoder.write(chunk);
      if (pending) await pending;
    } catch (error) {
      if (!verifier || !(error instanceof ProtocolError)) throw error;
      // Only a body read to its end can be verified; one that is not keeps the refusal.
      const whole = await drainInto(chunks, verifier, maxBodyBytes - total).catch(() => false);
      throw whole ? signatureFirst(error, verifier) : error;
    }
  }
}

/**
 * `bad_signature` if the verifier, which has seen the whole body, does not match it; else the
 * decoder's own `error`.
 */
export function signatureFirst(error: unknown, verifier: SignatureVerifier | null): unknown {
  if (!verifier || !(error instanceof ProtocolError) || error.code === 'bad_signature') return error;
  return mismatchOf(verifier) ?? error;
}

/** The verifier's refusal of the body it has seen whole, or null when the signature holds. */
function mismatchOf(verifier: SignatureVerifier): unknown {
  try {
    verifier.verify();
    return null;
  } catch (mismatch) {
    return mismatch;
  }
}

/**
 * What to answer a signed request refused on its headers (Content-Type, Content-Encoding,
 * Transfer-Encoding): its body is read through the verifier only, within the size bound, and
 * one that is not what was signed is `bad_signature`, as for a body the decoder refuses; a
 * sender whose signature holds is told `refusal`, as is one whose body cannot be read whole.
 */
export async function refusalOfSigned(
  body: ReceiverRequest['body'],
  verifier: SignatureVerifier,
  maxBodyBytes: number,
  refusal: unknown,
): Promise<unknown> {
  if (!(refusal instanceof ProtocolError || refusal instanceof ReceiverError)) return refusal;
  if (body instanceof Uint8Array) {
    if (body.length > maxBodyBytes) return refusal;
    verifier.update(body);
  } else if (body !== null) {
    const chunks = body[Symbol.asyncIterator]();
    if (!(await drainInto(chunks, verifier, maxBodyBytes).catch(() => false))) return refusal;
  }
  return mismatchOf(verifier) ?? refusal;
}

/** Reads the rest of a body into the verifier only; false when it is over `room` bytes. */
async function drainInto(
  chunks: AsyncIterator<Uint8Array>,
  verifier: SignatureVerifier,
  room: number,
): Promise<boolean> {
  let left = room;
  for (;;) {
    const next = await nextChunk(chunks);
    if (next.done) return true;
    left -= next.value.length;
    if (left < 0) return false;
    verifier.update(next.value);
  }
}

async function nextChunk(chunks: AsyncIterator<Uint8Array>): Promise<IteratorResult<Uint8Array>> {
  try {
    return await chunks.next();
  } catch (error) {
    if (error instanceof ReceiverError || error instanceof ProtocolError) throw error;
    throw new ReceiverError('aborted', 'the request ended before its body was complete', { cause: error });
  }
}
