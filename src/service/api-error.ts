import { StoreError } from '../store/index.ts';

/** An API failure with its stable code and HTTP status. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: string;
  readonly status: number;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const STORE_STATUS: Record<string, number> = {
  not_found: 404,
  conflict: 409,
  invalid_argument: 400,
  unavailable: 503,
};

/** The one place where errors become API answers: `{status, body}`. */
export function apiErrorResponse(error: unknown): {
  status: number;
  body: { error: { code: string; message: string } };
} {
  if (error instanceof ApiError)
    return { status: error.status, body: { error: { code: error.code, message: error.message } } };
  if (error instanceof StoreError) {
    return {
      status: STORE_STATUS[error.code] ?? 500,
      body: { error: { code: error.code, message: error.message } },
    };
  }
  return {
    status: 500,
    body: { error: { code: 'internal_error', message: 'the request could not be processed' } },
  };
}
