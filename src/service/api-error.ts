import { StoreError } from '../store/index.ts';

/** An API failure with its stable code, HTTP status and any headers the status requires. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

/** 405 naming the methods the resource takes (`Allow` is a MUST, RFC 9110 §15.5.6). */
export function methodNotAllowed(method: string, path: string, allowed: readonly string[]): ApiError {
  return new ApiError(405, 'method_not_allowed', `${method} is not allowed on ${path}`, {
    allow: allowed.join(', '),
  });
}

/** 401 with the challenge RFC 6750 §3 asks for; `invalid_token` when a key was given but is unknown. */
export function unauthorized(keyGiven: boolean): ApiError {
  const challenge = keyGiven ? 'Bearer realm="mediahook", error="invalid_token"' : 'Bearer realm="mediahook"';
  return new ApiError(401, 'unauthorized', 'an API key is required: Authorization: Bearer <key>', {
    'www-authenticate': challenge,
  });
}

const STORE_STATUS: Record<string, number> = {
  not_found: 404,
  conflict: 409,
  invalid_argument: 400,
  unavailable: 503,
};

/** The one place where errors become API answers: `{status, headers, body}`. */
export function apiErrorResponse(error: unknown): {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: { error: { code: string; message: string } };
} {
  if (error instanceof ApiError) {
    return {
      status: error.status,
      headers: error.headers,
      body: { error: { code: error.code, message: error.message } },
    };
  }
  if (error instanceof StoreError) {
    return {
      status: STORE_STATUS[error.code] ?? 500,
      headers: {},
      body: { error: { code: error.code, message: error.message } },
    };
  }
  return {
    status: 500,
    headers: {},
    body: { error: { code: 'internal_error', message: 'the request could not be processed' } },
  };
}
