import { isProtocolError } from '../protocol/index.ts';

/** Error codes of a receiver beyond those of the protocol. */
export type ReceiverErrorCode =
  | 'handler_failed'
  | 'body_consumed'
  | 'unsupported_encoding'
  | 'aborted'
  | 'malformed_request'
  | 'timeout'
  | 'in_progress'
  | 'storage_failed'
  | 'internal_error'
  | 'host_not_allowed'
  | 'cross_origin_request'
  | 'method_not_allowed';

/** A receiver's own failure, with a stable code. */
export class ReceiverError extends Error {
  override readonly name = 'ReceiverError';
  readonly code: ReceiverErrorCode;

  constructor(code: ReceiverErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** The `{"error":{"code","message"}}` body of a 500 answer. */
export interface ErrorBody {
  error: { code: string; message: string };
}

/**
 * Maps any failure to its stable code and message: the one place where errors become answers.
 * A file-system error is `storage_failed`; anything unforeseen is `internal_error` and does not
 * leak its details.
 */
export function errorBodyOf(error: unknown): ErrorBody {
  if (isProtocolError(error) || error instanceof ReceiverError) {
    return { error: { code: error.code, message: error.message } };
  }
  if (error instanceof Error && 'syscall' in error) {
    return {
      error: {
        code: 'storage_failed',
        message: `the file could not be stored (${String((error as NodeJS.ErrnoException).code)})`,
      },
    };
  }
  return { error: { code: 'internal_error', message: 'the callback could not be processed' } };
}

/** The HTTP status of a refusal: 405 for a method other than POST, else the spec's 500. */
export function statusOf(error: unknown): 405 | 500 {
  return error instanceof ReceiverError && error.code === 'method_not_allowed' ? 405 : 500;
}
