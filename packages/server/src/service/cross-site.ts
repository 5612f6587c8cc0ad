import type { IncomingHttpHeaders } from 'node:http';
import { originAllowed, originOf } from 'mediahook/internal';

/** Methods that change nothing: the only ones another site's page may have a browser send. */
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** Whether `origin` is the one the request's own `Host` names (over http or https, behind a proxy). */
function ownOrigin(origin: string, host: string | undefined): boolean {
  const read = originOf(origin);
  if (read === null || host === undefined) return false;
  return [`http://${host}`, `https://${host}`].some((own) => originOf(own) === read);
}

/**
 * Why a request that changes state is refused as coming from another site's page, or null. A
 * browser marks such a request with `Sec-Fetch-Site: cross-site` or `same-site` (another port on
 * localhost is the same site), and with an `Origin` other than the server's own; a `fetch` with
 * `mode: 'no-cors'` or a form is sent whatever CORS says. An origin in `allowed` passes.
 *
 * @example
 * crossSiteReason('POST', { origin: 'https://evil.example', host: '127.0.0.1:8080' }, new Set());
 * // 'Origin "https://evil.example" is not this server\'s own'
 */
export function crossSiteReason(
  method: string | undefined,
  headers: IncomingHttpHeaders,
  allowed: ReadonlySet<string>,
): string | null {
  if (SAFE_METHODS.has(method ?? 'GET')) return null;
  const origin = headers.origin;
  if (originAllowed(origin, allowed)) return null;
  const site = headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return `the browser marks it Sec-Fetch-Site: ${site}`;
  if (origin !== undefined && !ownOrigin(origin, headers.host)) {
    return `Origin ${JSON.stringify(origin.slice(0, 200))} is not this server's own`;
  }
  return null;
}

/**
 * The CORS headers of an answer to an allowed origin's page, which may then read it; none for
 * any other. A browser app calling the API with a key needs them, and its preflight (below).
 */
export function corsHeaders(
  headers: IncomingHttpHeaders,
  allowed: ReadonlySet<string>,
): Record<string, string> {
  if (allowed.size === 0) return {};
  const origin = headers.origin;
  if (!originAllowed(origin, allowed)) return { vary: 'origin' };
  return {
    vary: 'origin',
    'access-control-allow-origin': origin!,
    'access-control-expose-headers': 'etag, www-authenticate',
  };
}

/**
 * Whether a request is a CORS preflight from an allowed origin: answered 204 with
 * {@link preflightHeaders}, before any key is asked for (a preflight never carries one).
 */
export function isAllowedPreflight(
  method: string | undefined,
  headers: IncomingHttpHeaders,
  allowed: ReadonlySet<string>,
): boolean {
  return (
    method === 'OPTIONS' &&
    headers['access-control-request-method'] !== undefined &&
    originAllowed(headers.origin, allowed)
  );
}

/**
 * What an allowed origin's page may send: the API's methods and the headers its calls use, both
 * taken from its routes (`headers` are the request headers routes declare, beyond the common ones).
 */
export function preflightHeaders(
  methods: readonly string[],
  headers: readonly string[],
): Readonly<Record<string, string>> {
  const allowedMethods = new Set(['GET', 'HEAD', ...methods]);
  const allowedHeaders = new Set([
    'authorization',
    'content-type',
    'if-none-match',
    ...headers.map((name) => name.toLowerCase()),
  ]);
  return {
    'access-control-allow-methods': [...allowedMethods].join(', '),
    'access-control-allow-headers': [...allowedHeaders].join(', '),
    'access-control-max-age': '600',
  };
}
