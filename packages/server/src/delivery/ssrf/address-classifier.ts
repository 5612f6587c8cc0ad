/**
 * What kind of address an IP address is, for the SSRF guard: public, or one of the ranges a
 * webhook sender must not reach by default. The ranges follow the IANA special-purpose
 * registries, plus the instance-metadata endpoints of the big clouds.
 */
import {
  type Cidr,
  cidrContains,
  formatCidr,
  formatIpAddress,
  type IpAddress,
  parseCidr,
  parseHostAddress,
} from './ip-address.ts';

/** The categories an address can fall in; everything but `public` is refused by default. */
export const ADDRESS_CATEGORIES = [
  'public',
  'loopback',
  'unspecified',
  'private',
  'link-local',
  'metadata',
  'cgnat',
  'multicast',
  'reserved',
  'ula',
] as const;

export type AddressCategory = (typeof ADDRESS_CATEGORIES)[number];

/** IPv6 forms that carry an IPv4 address; such an address is classified by the IPv4 inside. */
export type Ipv4Embedding = 'ipv4-mapped' | 'ipv4-compatible' | 'ipv4-translated' | 'nat64' | '6to4';

export interface AddressClassification {
  readonly category: AddressCategory;
  /** The address in canonical text: a dotted quad, or RFC 5952 IPv6 (with its zone, if any). */
  readonly address: string;
  readonly family: 4 | 6;
  /** The special-purpose range that decided the category, e.g. `10.0.0.0/8`; absent when public. */
  readonly range?: string;
  /** For an IPv6 form carrying an IPv4 address: the form and that address (which decided). */
  readonly embedded?: { readonly form: Ipv4Embedding; readonly ipv4: string };
}

interface Rule {
  readonly range: Cidr;
  readonly category: AddressCategory;
}

function rules(table: readonly (readonly [string, AddressCategory])[]): Rule[] {
  return table.map(([text, category]) => {
    const range = parseCidr(text);
    if (range === undefined) throw new Error(`bad built-in range ${text}`);
    return { range, category };
  });
}

/**
 * Instance-metadata endpoints: the classic SSRF prize (credentials of the machine). Checked
 * before the broader ranges they sit in, and kept out of `allowPrivate`'s reach.
 */
const METADATA_RULES = rules([
  ['169.254.169.254', 'metadata'], // AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack…
  ['169.254.170.2', 'metadata'], // AWS ECS task metadata and credentials
  ['169.254.170.23', 'metadata'], // AWS EKS Pod Identity credentials
  ['169.254.42.42', 'metadata'], // Scaleway
  ['169.254.0.23', 'metadata'], // Tencent Cloud
  ['100.100.100.200', 'metadata'], // Alibaba Cloud
  ['192.0.0.192', 'metadata'], // Oracle Cloud (older instances)
  ['168.63.129.16', 'metadata'], // Azure WireServer: a public-looking address only the host answers
  ['fd00:ec2::254', 'metadata'], // AWS IMDS over IPv6
  ['fd00:ec2::23', 'metadata'], // AWS EKS Pod Identity over IPv6
  ['fd00:42::42', 'metadata'], // Scaleway over IPv6
  ['fd20:ce::254', 'metadata'], // GCP metadata server over IPv6
  ['fd00:c1::a9fe:a9fe', 'metadata'], // Oracle Cloud over IPv6
  ['fd00:a9fe:a9fe::1', 'metadata'], // Akamai (Linode) over IPv6
  // OpenStack over IPv6: inside fe80::/10, so without this allowPrivate would open it.
  ['fe80::a9fe:a9fe', 'metadata'],
]);

// First match wins; the narrower ranges come before the ones that contain them.
const IPV4_RULES = rules([
  ['0.0.0.0/8', 'unspecified'], // "this network"; 0.0.0.0 dials the local host on Linux
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments
  ['192.0.2.0/24', 'reserved'], // TEST-NET-1
  ['192.88.99.0/24', 'reserved'], // former 6to4 relay anycast
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'], // benchmarking
  ['198.51.100.0/24', 'reserved'], // TEST-NET-2
  ['203.0.113.0/24', 'reserved'], // TEST-NET-3
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'], // future use, and 255.255.255.255 (broadcast)
]);

const IPV6_RULES = rules([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['64:ff9b:1::/48', 'reserved'], // local-use NAT64: where the IPv4 sits depends on the network
  ['100::/64', 'reserved'], // discard-only
  ['2001:db8::/32', 'reserved'], // documentation
  ['2001::/23', 'reserved'], // IETF protocol assignments, Teredo (2001::/32) included
  ['3fff::/20', 'reserved'], // documentation (RFC 9637)
  ['5f00::/16', 'reserved'], // SRv6 segment identifiers
  ['fc00::/7', 'ula'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'private'], // deprecated site-local: the IPv6 idea of a private network
  ['ff00::/8', 'multicast'],
]);

/** Global unicast: any IPv6 address outside it (and not matched above) is unassigned. */
const IPV6_GLOBAL_UNICAST = parseCidr('2000::/3')!;

interface Embedding {
  readonly form: Ipv4Embedding;
  readonly range: Cidr;
  /** Bits to shift the IPv6 value right so that the IPv4 address is its lowest 32 bits. */
  readonly shift: bigint;
}

const EMBEDDINGS: readonly Embedding[] = [
  { form: 'ipv4-mapped', range: parseCidr('::ffff:0:0/96')!, shift: 0n },
  { form: 'ipv4-translated', range: parseCidr('::ffff:0:0:0/96')!, shift: 0n },
  { form: 'ipv4-compatible', range: parseCidr('::/96')!, shift: 0n },
  { form: 'nat64', range: parseCidr('64:ff9b::/96')!, shift: 0n },
  { form: '6to4', range: parseCidr('2002::/16')!, shift: 80n },
];

function matchRule(table: readonly Rule[], address: IpAddress): Rule | undefined {
  return table.find((rule) => cidrContains(rule.range, address));
}

function classifyIpv4(address: IpAddress): { category: AddressCategory; range?: string } {
  const rule = matchRule(METADATA_RULES, address) ?? matchRule(IPV4_RULES, address);
  return rule === undefined
    ? { category: 'public' }
    : { category: rule.category, range: formatCidr(rule.range) };
}

/** The IPv4 address inside an IPv6 address, if it is one of the forms that carry one. */
export function embeddedIpv4(address: IpAddress): { form: Ipv4Embedding; ipv4: IpAddress } | undefined {
  if (address.family !== 6) return undefined;
  // :: and ::1 sit in ::/96 but are IPv6's own unspecified and loopback addresses.
  if (address.value <= 1n) return undefined;
  const embedding = EMBEDDINGS.find(({ range }) => cidrContains(range, address));
  if (embedding === undefined) return undefined;
  return {
    form: embedding.form,
    ipv4: { family: 4, value: (address.value >> embedding.shift) & 0xffffffffn },
  };
}

/**
 * Classifies an IP address. Text is read as a dialler reads a host name, so the odd IPv4
 * spellings (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`) and IPv6 with brackets or a zone
 * are understood; IPv6 forms carrying an IPv4 address (`::ffff:127.0.0.1`, NAT64 `64:ff9b::/96`,
 * 6to4 `2002::/16`) take the category of that IPv4 address. Throws a TypeError for text that
 * is not an IP address.
 *
 * @example
 * classifyAddress('10.0.0.5').category;            // 'private'
 * classifyAddress('::ffff:7f00:1');                // { category: 'loopback', range: '127.0.0.0/8', embedded: { form: 'ipv4-mapped', ipv4: '127.0.0.1' }, … }
 * classifyAddress('169.254.169.254').category;     // 'metadata'
 * classifyAddress('2606:4700::1111').category;     // 'public'
 */
export function classifyAddress(address: string | IpAddress): AddressClassification {
  const ip = typeof address === 'string' ? parseHostAddress(address) : address;
  if (ip === undefined) throw new TypeError(`not an IP address: ${JSON.stringify(address)}`);
  const text = formatIpAddress(ip);
  if (ip.family === 4) return { ...classifyIpv4(ip), address: text, family: 4 };

  const metadata = matchRule(METADATA_RULES, ip);
  if (metadata !== undefined) {
    return { category: 'metadata', range: formatCidr(metadata.range), address: text, family: 6 };
  }
  const inner = embeddedIpv4(ip);
  if (inner !== undefined) {
    const embedded = { form: inner.form, ipv4: formatIpAddress(inner.ipv4) };
    const byIpv4 = classifyIpv4(inner.ipv4);
    // The deprecated compatible and translated forms route nowhere as IPv6: outside 2000::/3,
    // they are reserved unless the IPv4 inside refuses them for a reason of its own.
    if (
      byIpv4.category === 'public' &&
      (inner.form === 'ipv4-compatible' || inner.form === 'ipv4-translated')
    ) {
      const range = inner.form === 'ipv4-compatible' ? '::/96' : '::ffff:0:0:0/96';
      return { category: 'reserved', range, address: text, family: 6, embedded };
    }
    return { ...byIpv4, address: text, family: 6, embedded };
  }
  const rule = matchRule(IPV6_RULES, ip);
  if (rule !== undefined)
    return { category: rule.category, range: formatCidr(rule.range), address: text, family: 6 };
  if (!cidrContains(IPV6_GLOBAL_UNICAST, ip)) {
    // Unassigned space: name the /3 block it falls in, e.g. 4000::/3.
    const block = { family: 6 as const, base: ip.value & (0b111n << 125n), prefix: 3 };
    return { category: 'reserved', range: formatCidr(block), address: text, family: 6 };
  }
  return { category: 'public', address: text, family: 6 };
}
