/**
 * The checks a webhook URL can pass before anything is resolved: when an operation is accepted
 * and again before each delivery. They catch what the URL alone gives away; the addresses a
 * host name resolves to are checked when they are dialled (see guarded-lookup.ts).
 */
import { parseHostAddress } from './ip-address.ts';
import { SsrfRefusedError } from './ssrf-error.ts';
import { assertAddressAllowed, judgeAddress, normalizeHostname, type SsrfPolicy } from './ssrf-policy.ts';

/** The schemes a webhook may use. */
const WEBHOOK_SCHEMES: readonly string[] = ['http:', 'https:'];

/**
 * Names that always mean this machine: `localhost` and its subdomains (RFC 6761), which
 * resolvers and browsers answer with loopback without asking DNS.
 */
function isLocalhostName(hostname: string): boolean {
  return hostname === 'localhost' || hostname.endsWith('.localhost');
}

function parseUrl(url: string | URL): URL {
  try {
    // A fresh copy even of a URL object: the caller keeps theirs, the check keeps what it checked.
    return new URL(typeof url === 'string' ? url : url.href);
  } catch (error) {
    throw new SsrfRefusedError('url_invalid', 'the webhook URL is not a valid absolute URL', {
      cause: error,
    });
  }
}

/**
 * Checks a webhook URL against the SSRF policy and returns it parsed. Refuses, with an
 * SsrfRefusedError:
 * - a scheme other than `http:` / `https:` (`url_scheme`);
 * - a user name or password in the URL (`url_credentials`): callbacks authenticate by their
 *   signature, credentials in a URL end up in logs and in the operation resource, and
 *   `https://trusted.example@evil.example/` is the classic way to dress one host as another;
 * - a host that is an IP address (in any spelling the URL parser accepts) or a `localhost`
 *   name, when the policy does not allow its category (`address_refused`).
 *
 * A host name that needs DNS passes here; its addresses are checked when a connection is made,
 * on the address actually dialled. Ports are not restricted: receivers listen where they like.
 *
 * @example
 * checkWebhookUrl('https://hooks.example.com/cb', {});          // URL
 * checkWebhookUrl('http://[::ffff:7f00:1]/', {});                // throws: ::ffff:7f00:1 is loopback …
 * checkWebhookUrl('http://127.0.0.1:9000/', { allowPrivate: true }); // URL
 */
export function checkWebhookUrl(url: string | URL, policy: SsrfPolicy = {}): URL {
  const parsed = parseUrl(url);
  if (!WEBHOOK_SCHEMES.includes(parsed.protocol)) {
    throw new SsrfRefusedError(
      'url_scheme',
      `scheme ${parsed.protocol} is not allowed (only http: and https:)`,
    );
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new SsrfRefusedError(
      'url_credentials',
      'the webhook URL carries credentials (user:password@host)',
      {
        hostname: parsed.hostname,
      },
    );
  }
  // The WHATWG parser has already turned `0177.0.0.1`, `2130706433` or `0x7f.1` into
  // `127.0.0.1` for http(s); reading the host as a dialler would keeps the check right even
  // if it had not.
  const address = parseHostAddress(parsed.hostname);
  if (address !== undefined) {
    assertAddressAllowed(policy, address);
    return parsed;
  }
  const hostname = normalizeHostname(parsed.hostname);
  // A localhost name dials 127.0.0.1 or ::1: open when the policy opens either for this name.
  if (
    isLocalhostName(hostname) &&
    !judgeAddress(policy, '127.0.0.1', hostname).allowed &&
    !judgeAddress(policy, '::1', hostname).allowed
  ) {
    throw new SsrfRefusedError(
      'address_refused',
      `${hostname} is loopback (localhost names, RFC 6761); allowPrivate (--allow-private-urls) or an allow-list entry opens it`,
      { hostname, category: 'loopback' },
    );
  }
  return parsed;
}
