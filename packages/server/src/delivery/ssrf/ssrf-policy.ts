/**
 * The SSRF policy: which addresses a webhook delivery may dial. Public addresses always; the
 * other categories only through `allowPrivate` or an allow-list entry.
 */

import { domainToASCII } from 'node:url';
import {
  type AddressCategory,
  type AddressClassification,
  classifyAddress,
  embeddedIpv4,
} from './address-classifier.ts';
import {
  type Cidr,
  cidrContains,
  type IpAddress,
  parseCidr,
  parseHostAddress,
  parseIpv4Hostname,
} from './ip-address.ts';
import { SsrfRefusedError } from './ssrf-error.ts';

/**
 * What the guard lets through besides public addresses.
 *
 * @example
 * const local: SsrfPolicy = { allowPrivate: true }; // `--allow-private-urls`
 * const office: SsrfPolicy = { allow: ['10.20.0.0/16', 'hooks.corp.example', '*.svc.cluster.local'] };
 */
export interface SsrfPolicy {
  /**
   * Entries that open addresses of any category, metadata included, so keep them narrow:
   * - a CIDR range or a single address (`10.20.0.0/16`, `fd00::/8`, `127.0.0.1`, `[::1]`):
   *   any dialled address inside it. An IPv4-mapped address (`::ffff:10.0.0.5`) dials its
   *   IPv4 address and is matched as that address, and a mapped entry as its IPv4 range, so
   *   `::/0` opens no IPv4 address; NAT64 and 6to4 addresses reach other hosts and are matched
   *   only as themselves;
   * - a host name (`hooks.corp.example`) or a wildcard for its subdomains (`*.corp.example`):
   *   whatever addresses that name resolves to. This trusts the name's DNS.
   */
  readonly allow?: readonly string[];
  /**
   * Opens loopback, unspecified, private, link-local, CGNAT and ULA addresses: local work and
   * receivers on the same network (`--allow-private-urls`). Metadata endpoints, multicast and
   * reserved ranges stay refused; an allow-list entry opens those.
   */
  readonly allowPrivate?: boolean;
}

/** The categories `allowPrivate` opens. */
const PRIVATE_CATEGORIES: readonly AddressCategory[] = [
  'loopback',
  'unspecified',
  'private',
  'link-local',
  'cgnat',
  'ula',
];

/** Why an address may be dialled: public, `allowPrivate`, or the allow-list entry that opened it. */
type AddressVerdict =
  | { readonly allowed: true; readonly classification: AddressClassification; readonly by: string }
  | { readonly allowed: false; readonly classification: AddressClassification };

interface RangeEntry {
  readonly range: Cidr;
  readonly entry: string;
}

interface CompiledPolicy {
  readonly ranges: readonly RangeEntry[];
  /** Exact host names, normalised, to the entry that named them. */
  readonly names: ReadonlyMap<string, string>;
  /** `*.corp.example` entries as `.corp.example`: subdomains match, the name itself does not. */
  readonly suffixes: readonly { readonly suffix: string; readonly entry: string }[];
  readonly allowPrivate: boolean;
}

type CompiledEntry =
  | { readonly kind: 'range'; readonly range: Cidr }
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'suffix'; readonly suffix: string };

const IPV4_MAPPED = parseCidr('::ffff:0:0/96')!;

/**
 * An IPv4-mapped range is the IPv4 range it maps (`::ffff:10.0.0.0/104` is `10.0.0.0/8`), since
 * a mapped address dials the IPv4 host itself; other ranges are kept as written.
 */
function asIpv4Range(range: Cidr): Cidr {
  const mapped =
    range.family === 6 && range.prefix >= 96 && cidrContains(IPV4_MAPPED, { family: 6, value: range.base });
  return mapped ? { family: 4, base: range.base & 0xffffffffn, prefix: range.prefix - 96 } : range;
}

const HOST_NAME = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/;
const compiledPolicies = new WeakMap<SsrfPolicy, CompiledPolicy>();

/** Lower case, ASCII (punycode) and without trailing dots: the form host names are compared in. */
export function normalizeHostname(hostname: string): string {
  // Every trailing dot: `localhost..` is still a localhost name to the URL parser. A loop, not
  // /\.+$/, which backtracks quadratically on a long run of dots inside a name.
  let end = hostname.length;
  while (end > 0 && hostname[end - 1] === '.') end -= 1;
  return domainToASCII(hostname.slice(0, end)).toLowerCase();
}

function compileEntry(entry: string): CompiledEntry {
  const text = entry.trim();
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const range = parseCidr(unbracketed);
  if (range !== undefined) return { kind: 'range', range };
  const quoted = JSON.stringify(entry);
  if (text.includes('/') || text.includes(':')) {
    throw new TypeError(`allow-list entry ${quoted} is not an address or a CIDR range with zero host bits`);
  }
  // `127.1` or `0x7f.0.0.1` would dial 127.0.0.1: refuse the ambiguity rather than guess.
  if (parseIpv4Hostname(text) !== undefined) {
    throw new TypeError(`allow-list entry ${quoted}: write IPv4 addresses as four decimal octets`);
  }
  const wildcard = text.startsWith('*.');
  const name = normalizeHostname(wildcard ? text.slice(2) : text);
  if (!HOST_NAME.test(name)) throw new TypeError(`allow-list entry ${quoted} is not a host name`);
  return wildcard ? { kind: 'suffix', suffix: `.${name}` } : { kind: 'name', name };
}

function compile(policy: SsrfPolicy): CompiledPolicy {
  const cached = compiledPolicies.get(policy);
  if (cached !== undefined) return cached;
  const ranges: RangeEntry[] = [];
  const names = new Map<string, string>();
  const suffixes: { suffix: string; entry: string }[] = [];
  for (const entry of policy.allow ?? []) {
    if (typeof entry !== 'string') throw new TypeError('allow-list entries are strings');
    const compiled = compileEntry(entry);
    if (compiled.kind === 'range') ranges.push({ range: asIpv4Range(compiled.range), entry });
    else if (compiled.kind === 'name') names.set(compiled.name, entry);
    else suffixes.push({ suffix: compiled.suffix, entry });
  }
  const result = { ranges, names, suffixes, allowPrivate: policy.allowPrivate === true };
  compiledPolicies.set(policy, result);
  return result;
}

/**
 * Checks a policy's allow-list once, up front, so a typo fails at start-up rather than at the
 * first delivery. Throws a TypeError naming the bad entry.
 */
export function validateSsrfPolicy(policy: SsrfPolicy): void {
  compile(policy);
}

/** The allow-list entry that names this host (exactly or by wildcard), if any. */
function allowListEntryForHostname(policy: SsrfPolicy, hostname: string): string | undefined {
  const { names, suffixes } = compile(policy);
  const name = normalizeHostname(hostname);
  return names.get(name) ?? suffixes.find(({ suffix }) => name.endsWith(suffix))?.entry;
}

function allowListEntryForAddress(policy: CompiledPolicy, ip: IpAddress): string | undefined {
  // A mapped address is matched as the IPv4 host it dials, so `::/0` does not open the
  // metadata endpoint as `::ffff:169.254.169.254`. The other embeddings (6to4 holds a whole
  // /48 of hosts behind a router, NAT64 goes through a gateway) are other destinations.
  const inner = embeddedIpv4(ip);
  const target = inner?.form === 'ipv4-mapped' ? inner.ipv4 : ip;
  return policy.ranges.find(({ range }) => cidrContains(range, target))?.entry;
}

/**
 * Judges one address about to be dialled. `hostname` is the name it was resolved from, if any:
 * a host-name entry of the allow-list opens every address of that name.
 *
 * @example
 * judgeAddress({}, '10.0.0.5');                      // { allowed: false, classification: { category: 'private', … } }
 * judgeAddress({ allowPrivate: true }, '10.0.0.5');  // { allowed: true, by: 'allowPrivate', … }
 */
export function judgeAddress(
  policy: SsrfPolicy,
  address: string | IpAddress,
  hostname?: string,
): AddressVerdict {
  const compiled = compile(policy);
  const ip = typeof address === 'string' ? parseHostAddress(address) : address;
  if (ip === undefined) throw new TypeError(`not an IP address: ${JSON.stringify(address)}`);
  const classification = classifyAddress(ip);
  if (classification.category === 'public') return { allowed: true, classification, by: 'public' };
  const byAddress = allowListEntryForAddress(compiled, ip);
  if (byAddress !== undefined) return { allowed: true, classification, by: `allow-list entry ${byAddress}` };
  const byName = hostname === undefined ? undefined : allowListEntryForHostname(policy, hostname);
  if (byName !== undefined) return { allowed: true, classification, by: `allow-list entry ${byName}` };
  if (compiled.allowPrivate && PRIVATE_CATEGORIES.includes(classification.category)) {
    return { allowed: true, classification, by: 'allowPrivate' };
  }
  return { allowed: false, classification };
}

/** Plain words for the categories whose name alone says little to someone reading a log. */
const CATEGORY_GLOSSES: Partial<Record<AddressCategory, string>> = {
  metadata: 'a cloud instance-metadata endpoint',
  cgnat: 'carrier-grade NAT shared space',
  ula: 'IPv6 unique local',
  reserved: 'special-purpose, not globally routed',
};

/** The reason text of a refused address: what it is, which range decided, and what would open it. */
function describeRefusal(classification: AddressClassification, hostname?: string): string {
  const { address, category, range, embedded } = classification;
  const what = CATEGORY_GLOSSES[category];
  const where = [what, embedded && `${embedded.form} ${embedded.ipv4}`, range && `in ${range}`]
    .filter(Boolean)
    .join(', ');
  const from = hostname === undefined ? '' : `, resolved from ${hostname}`;
  const opener = PRIVATE_CATEGORIES.includes(category)
    ? 'allowPrivate (--allow-private-urls) or an allow-list entry opens it'
    : 'only an allow-list entry opens it';
  return `${address} is ${category} (${where})${from}; ${opener}`;
}

/**
 * Returns the classification of an address the policy allows; throws an SsrfRefusedError
 * (`address_refused`) for one it does not.
 */
export function assertAddressAllowed(
  policy: SsrfPolicy,
  address: string | IpAddress,
  hostname?: string,
): AddressClassification {
  const verdict = judgeAddress(policy, address, hostname);
  if (verdict.allowed) return verdict.classification;
  const { classification } = verdict;
  throw new SsrfRefusedError('address_refused', describeRefusal(classification, hostname), {
    address: classification.address,
    category: classification.category,
    hostname,
  });
}
