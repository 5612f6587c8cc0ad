/**
 * Name resolution that only ever yields addresses the SSRF policy allows. Checking the URL is
 * not enough: a name can resolve to a public address when the operation is accepted and to
 * 127.0.0.1 when the callback is sent (DNS rebinding), so the check belongs to the resolution
 * whose answer is dialled, once per connection, and the answer is never looked up twice.
 *
 * A name with several addresses is refused as a whole when any one of them is refused, rather
 * than dialled on the allowed ones: a name mixing public and internal addresses is a rebinding
 * attempt or a misconfiguration, and filtering would make deliveries succeed or fail by which
 * address came first. The refusal names the offending address, so the fix is plain.
 */

import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { formatIpAddress, parseHostAddress, parseIpAddress } from './ip-address.ts';
import { SsrfRefusedError } from './ssrf-error.ts';
import { assertAddressAllowed, type SsrfPolicy } from './ssrf-policy.ts';

/** One answer of a resolver. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: number;
}

/** What a resolver is asked besides the name; `family` 0 means both. */
export interface ResolveOptions {
  readonly family?: 0 | 4 | 6;
  readonly hints?: number;
}

/**
 * Resolves a host name to all its addresses. The default is the system's (`getaddrinfo`, as
 * `net.connect` would use); tests and special deployments inject their own.
 */
export type Resolver = (hostname: string, options: ResolveOptions) => Promise<readonly ResolvedAddress[]>;

/** `dns.promises.lookup` with `all: true`: the resolver `net.connect` would have used. */
export const systemResolver: Resolver = (hostname, { family = 0, hints }) =>
  dnsLookup(hostname, hints === undefined ? { all: true, family } : { all: true, family, hints });

/** How long a resolution may take, by default: undici's connect timeout only starts at the dial. */
const DEFAULT_RESOLVE_TIMEOUT_MS = 10_000;

interface GuardedResolveOptions extends ResolveOptions {
  readonly resolver?: Resolver | undefined;
  /** Milliseconds before the resolution fails with `ETIMEOUT`; default 10 s. */
  readonly timeout?: number | undefined;
}

function withTimeout<T>(promise: Promise<T>, milliseconds: number, hostname: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`resolving ${hostname} took longer than ${milliseconds} ms`);
      reject(Object.assign(error, { code: 'ETIMEOUT', hostname }));
    }, milliseconds);
    timer.unref();
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

function unbracket(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * Resolves a host and checks every address against the policy; returns them all, in the
 * resolver's order and canonical text, or throws an SsrfRefusedError naming the first refused
 * one. A host that is an IP literal, in any spelling a dialler accepts (`0177.0.0.1`,
 * `[::1]`, `fe80::1%eth0`), is checked as it is and not resolved.
 *
 * @example
 * await resolveAllowedAddresses({}, 'example.com');  // [{ address: '93.184.215.14', family: 4 }, …]
 * await resolveAllowedAddresses({}, 'localhost');    // throws: 127.0.0.1 is loopback …
 */
export async function resolveAllowedAddresses(
  policy: SsrfPolicy,
  hostname: string,
  options: GuardedResolveOptions = {},
): Promise<ResolvedAddress[]> {
  const host = unbracket(hostname);
  const literal = parseHostAddress(host);
  if (literal !== undefined) {
    assertAddressAllowed(policy, literal);
    return [{ address: formatIpAddress(literal), family: literal.family }];
  }
  const { resolver = systemResolver, timeout = DEFAULT_RESOLVE_TIMEOUT_MS, family = 0, hints } = options;
  const answers = await withTimeout(
    resolver(host, hints === undefined ? { family } : { family, hints }),
    timeout,
    host,
  );
  if (answers.length === 0) {
    throw Object.assign(new Error(`${host} resolved to no address`), { code: 'ENOTFOUND', hostname: host });
  }
  return answers.map((answer) => {
    const ip = typeof answer?.address === 'string' ? parseIpAddress(answer.address) : undefined;
    if (ip === undefined) {
      const shown = JSON.stringify(answer?.address);
      throw new SsrfRefusedError(
        'address_invalid',
        `${host} resolved to ${shown}, which is not an IP address`,
        {
          hostname: host,
        },
      );
    }
    assertAddressAllowed(policy, ip, host);
    return { address: formatIpAddress(ip), family: ip.family };
  });
}

function familyOf(value: LookupOptions['family']): 0 | 4 | 6 {
  if (value === 4 || value === 'IPv4') return 4;
  if (value === 6 || value === 'IPv6') return 6;
  return 0;
}

/**
 * A `lookup` for `net.connect`, `tls.connect`, `http.request` or undici's `connect` options:
 * it resolves with the injected resolver, refuses (with an SsrfRefusedError) when any address
 * is not allowed, and answers `all: true` callers with every address, others with the first.
 * `net.connect` does not call `lookup` for an IP-literal host, so pair it with
 * `checkWebhookUrl` or use `createGuardedAgent`, which checks literals too.
 *
 * @example
 * const lookup = createGuardedLookup({ allowPrivate: false });
 * net.connect({ host: 'hooks.example.com', port: 443, lookup });
 */
export function createGuardedLookup(
  policy: SsrfPolicy,
  options: { readonly resolver?: Resolver; readonly timeout?: number } = {},
): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    // dns.lookup's own shapes: (hostname, callback) and (hostname, family, callback).
    let done = callback;
    let asked: LookupOptions = {};
    if (typeof lookupOptions === 'function') done = lookupOptions as typeof callback;
    else if (typeof lookupOptions === 'number') asked = { family: lookupOptions };
    else if (lookupOptions !== null && typeof lookupOptions === 'object') asked = lookupOptions;
    const family = familyOf(asked.family);
    const resolveOptions = {
      ...options,
      family,
      ...(asked.hints === undefined ? {} : { hints: asked.hints }),
    };
    resolveAllowedAddresses(policy, hostname, resolveOptions).then(
      (addresses) => {
        if (asked.all === true) {
          done(
            null,
            addresses.map((entry): LookupAddress => ({ address: entry.address, family: entry.family })),
          );
        } else {
          const [first] = addresses;
          done(null, first!.address, first!.family);
        }
      },
      (error: unknown) => {
        (done as (error: unknown) => void)(error);
      },
    );
  };
}
