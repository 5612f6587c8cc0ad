/** Why a callback handed in for delivery was refused, besides the protocol's own file codes. */
export type SubmissionErrorCode = 'invalid' | 'webhook_url_not_allowed' | 'conflict';

/**
 * `invalid`: a part is missing, unknown or not usable (HTTP 400); `webhook_url_not_allowed`: the
 * SSRF guard refuses the webhook URL from its text alone (HTTP 400); `conflict`: the `id_gen`
 * was handed in before with other content (HTTP 409).
 */
export class SubmissionError extends Error {
  override readonly name = 'SubmissionError';
  readonly code: SubmissionErrorCode;

  constructor(code: SubmissionErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
