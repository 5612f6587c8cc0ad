import type { AddressCategory } from './address-classifier.ts';

/**
 * Stable codes of the SSRF guard's refusals; they never change meaning within a major version.
 *
 * - `url_invalid`: the webhook URL does not parse;
 * - `url_scheme`: the scheme is not `http:` or `https:`;
 * - `url_credentials`: the URL carries a user name or password;
 * - `address_refused`: the host is, or resolved to, an address whose category is not allowed;
 * - `address_invalid`: the resolver answered something that is not an IP address.
 */
export const SSRF_REFUSAL_CODES = [
  'url_invalid',
  'url_scheme',
  'url_credentials',
  'address_refused',
  'address_invalid',
] as const;

export type SsrfRefusalCode = (typeof SSRF_REFUSAL_CODES)[number];

/** What the guard looked at when it refused, for logs and for the attempt record. */
interface SsrfRefusalDetails {
  /** The host name of the URL or of the connection, when there is one. */
  readonly hostname?: string | undefined;
  /** The address that was refused (canonical text). */
  readonly address?: string | undefined;
  readonly category?: AddressCategory | undefined;
  readonly cause?: unknown;
}

/**
 * The SSRF guard refused a webhook URL or a connection; nothing was dialled. The message starts
 * `refused by the SSRF guard:` and names the address, its category and the range that decided,
 * so it can be recorded as the attempt's error as it is.
 *
 * @example
 * try { checkWebhookUrl('http://10.0.0.5/hook', {}); }
 * catch (e) { if (e instanceof SsrfRefusedError) console.log(e.code, e.message); }
 * // address_refused refused by the SSRF guard: 10.0.0.5 is private (10.0.0.0/8); …
 */
export class SsrfRefusedError extends Error {
  override readonly name = 'SsrfRefusedError';
  readonly code: SsrfRefusalCode;
  readonly hostname: string | undefined;
  readonly address: string | undefined;
  readonly category: AddressCategory | undefined;

  constructor(code: SsrfRefusalCode, reason: string, details: SsrfRefusalDetails = {}) {
    super(
      `refused by the SSRF guard: ${reason}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.code = code;
    this.hostname = details.hostname;
    this.address = details.address;
    this.category = details.category;
  }
}

/**
 * Finds the guard's refusal inside an error as an HTTP client reports it: the error itself,
 * its `cause` chain (`fetch` wraps connect errors in `TypeError: fetch failed`) or the members
 * of an AggregateError.
 *
 * @example
 * const refusal = findSsrfRefusal(error);
 * if (refusal) attempt.error = refusal.message;
 */
export function findSsrfRefusal(error: unknown): SsrfRefusedError | undefined {
  const seen = new Set<unknown>();
  const pending: unknown[] = [error];
  while (pending.length > 0) {
    const current = pending.shift();
    if (current === null || typeof current !== 'object' || seen.has(current)) continue;
    seen.add(current);
    if (current instanceof SsrfRefusedError) return current;
    if (current instanceof AggregateError) pending.push(...current.errors);
    if ('cause' in current) pending.push(current.cause);
  }
  return undefined;
}
