/**
 * Stable error codes of the callback protocol. A receiver answers every one of them with
 * HTTP 500 and the body `{"error":{"code","message"}}`; the codes never change meaning within
 * a major version.
 */
export const PROTOCOL_ERROR_CODES = [
  'not_multipart',
  'malformed_multipart',
  'headers_too_large',
  'too_many_parts',
  'body_too_large',
  'missing_part',
  'unexpected_part',
  'duplicate_part',
  'expected_file',
  'expected_text',
  'invalid_text',
  'text_too_large',
  'file_too_large',
  'media_mismatch',
  'bad_signature',
  'aborted',
] as const;

export type ProtocolErrorCode = (typeof PROTOCOL_ERROR_CODES)[number];

/**
 * An error in a callback on the wire: malformed, over a limit, or badly signed.
 *
 * @example
 * try { await decodeCallback(req, req.headers['content-type']); }
 * catch (e) { if (e instanceof ProtocolError) console.log(e.code); }
 */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  readonly code: ProtocolErrorCode;

  constructor(code: ProtocolErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** The JSON body a receiver answers with. */
  toJSON(): { error: { code: string; message: string } } {
    return { error: { code: this.code, message: this.message } };
  }
}

export function isProtocolError(value: unknown): value is ProtocolError {
  return value instanceof ProtocolError;
}
