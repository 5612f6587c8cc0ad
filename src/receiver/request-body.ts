import { type CallbackDecoder, ProtocolError, type SignatureVerifier } from '../protocol/index.ts';
import type { ReceiverRequest } from './receiver.ts';
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

/** Reads the body into the decoder (and the verifier), bounded in size. */
export async function feed(
  body: ReceiverRequest['body'],
  decoder: CallbackDecoder,
  verifier: SignatureVerifier | null,
  maxBodyBytes: number,
): Promise<void> {
  if (body === null) return;
  if (body instanceof Uint8Array) {
    if (body.length > maxBodyBytes) throw tooLarge(maxBodyBytes);
    verifier?.update(body);
    await decoder.write(body);
    return;
  }
  const chunks = body[Symbol.asyncIterator]();
  let total = 0;
  for (;;) {
    let next: IteratorResult<Uint8Array>;
    try {
      next = await chunks.next();
    } catch (error) {
      if (error instanceof ReceiverError || error instanceof ProtocolError) throw error;
      throw new ReceiverError('aborted', 'the request ended before its body was complete', { cause: error });
    }
    if (next.done) return;
    const chunk = next.value;
    total += chunk.length;
    if (total > maxBodyBytes) throw tooLarge(maxBodyBytes);
    verifier?.update(chunk);
    const pending = decoder.write(chunk);
    if (pending) await pending;
  }
}

function tooLarge(maxBodyBytes: number): ProtocolError {
  return new ProtocolError('body_too_large', `the body is larger than ${maxBodyBytes} bytes`);
}
