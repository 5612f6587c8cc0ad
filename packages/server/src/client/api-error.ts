/**
 * Every answer of the service other than 2xx, as one error: its HTTP status and the stable
 * `code` of its `{"error":{"code","message"}}` body.
 *
 * @example
 * try {
 *   await client.operations.get('nope');
 * } catch (error) {
 *   if (error instanceof MediahookApiError && error.code === 'not_found') console.log('gone');
 * }
 */
export class MediahookApiError extends Error {
  override readonly name = 'MediahookApiError';
  readonly status: number;
  /** The service's code (`not_found`, `invalid_request`…); `unexpected_answer` for a body without one. */
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The error an answer that is not 2xx stands for, read from its body. */
export async function apiErrorOf(response: Response): Promise<MediahookApiError> {
  const text = await response.text().catch(() => '');
  let error: { code?: unknown; message?: unknown } | undefined;
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error;
  } catch {
    // Not the API's JSON (a proxy's page, say): told by status below.
  }
  if (typeof error?.code === 'string' && typeof error.message === 'string') {
    return new MediahookApiError(response.status, error.code, error.message);
  }
  const excerpt = text.slice(0, 200).trim();
  return new MediahookApiError(
    response.status,
    'unexpected_answer',
    `HTTP ${response.status} without the API's error body${excerpt ? `: ${excerpt}` : ''}`,
  );
}
