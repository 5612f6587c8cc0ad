/**
 * IP addresses as numbers: parsing (strict, and as a dialler reads a host name), canonical
 * text and CIDR ranges. Written here rather than taken from `node:net` because the guard has to
 * read every spelling the dialler would accept, and `net.isIP` rejects the odd ones that
 * `getaddrinfo` (via `inet_aton`) still dials.
 */

/** An IPv4 address in 32 bits or an IPv6 address in 128 bits; `zone` is an IPv6 scope (`%eth0`). */
export interface IpAddress {
  readonly family: 4 | 6;
  readonly value: bigint;
  readonly zone?: string;
}

/** A range of addresses: those whose first `prefix` bits equal those of `base`. */
export interface Cidr {
  readonly family: 4 | 6;
  readonly base: bigint;
  readonly prefix: number;
}

const BITS = { 4: 32, 6: 128 } as const;
const DECIMAL_OCTET = /^(?:0|[1-9][0-9]{0,2})$/;
const HEX_GROUP = /^[0-9a-f]{1,4}$/i;

/**
 * Parses a dotted-quad IPv4 address the strict way (`net.isIPv4`): four decimal octets, no
 * leading zeros, so that `010.0.0.1` is not silently read as either 10.0.0.1 or 8.0.0.1.
 */
export function parseStrictIpv4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    if (!DECIMAL_OCTET.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = (value << 8n) | BigInt(octet);
  }
  return value;
}

function parseIpv4Number(part: string): bigint | undefined {
  if (part === '') return undefined;
  if (/^0x/i.test(part)) {
    const digits = part.slice(2);
    if (digits === '') return 0n; // WHATWG reads a bare `0x` as zero
    return /^[0-9a-f]+$/i.test(digits) ? BigInt(`0x${digits}`) : undefined;
  }
  if (part.length > 1 && part.startsWith('0')) {
    const digits = part.slice(1);
    return /^[0-7]+$/.test(digits) ? BigInt(`0o${digits}`) : undefined;
  }
  return /^[0-9]+$/.test(part) ? BigInt(part) : undefined;
}

/**
 * Parses an IPv4 address the way a host name is read by `inet_aton` and the WHATWG URL host
 * parser: one to four parts, each decimal, octal (leading `0`) or hexadecimal (`0x`), the last
 * part filling the remaining bytes, and an optional trailing dot. Returns undefined for
 * anything else (which a dialler would then treat as a name to resolve).
 *
 * @example
 * parseIpv4Hostname('0177.0.0.1'); // 2130706433n (127.0.0.1)
 * parseIpv4Hostname('0x7f.1');     // 2130706433n
 * parseIpv4Hostname('10.1.1');     // 167837953n (10.1.0.1)
 */
export function parseIpv4Hostname(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length > 1 && parts.at(-1) === '') parts.pop();
  if (parts.length === 0 || parts.length > 4) return undefined;
  const numbers: bigint[] = [];
  for (const part of parts) {
    const number = parseIpv4Number(part);
    if (number === undefined) return undefined;
    numbers.push(number);
  }
  const last = numbers.pop()!;
  if (numbers.some((number) => number > 255n)) return undefined;
  const lastBits = BigInt(8 * (4 - numbers.length));
  if (last >= 1n << lastBits) return undefined;
  let value = 0n;
  for (const number of numbers) value = (value << 8n) | number;
  return (value << lastBits) | last;
}

function ipv6Groups(section: string, mayEndInIpv4: boolean): number[] | undefined {
  if (section === '') return [];
  const pieces = section.split(':');
  const groups: number[] = [];
  for (const [index, piece] of pieces.entries()) {
    if (mayEndInIpv4 && index === pieces.length - 1 && piece.includes('.')) {
      const ipv4 = parseStrictIpv4(piece);
      if (ipv4 === undefined) return undefined;
      groups.push(Number(ipv4 >> 16n), Number(ipv4 & 0xffffn));
    } else if (HEX_GROUP.test(piece)) {
      groups.push(Number.parseInt(piece, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}

/**
 * Parses an IPv6 address: `::` compression, a dotted IPv4 tail (`::ffff:127.0.0.1`), an
 * optional zone (`fe80::1%eth0`) and optional brackets (`[::1]`, as in URLs).
 */
export function parseIpv6(text: string): IpAddress | undefined {
  let body = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  let zone: string | undefined;
  const percent = body.indexOf('%');
  if (percent !== -1) {
    zone = body.slice(percent + 1);
    if (zone === '' || /[\s[\]/]/.test(zone)) return undefined;
    body = body.slice(0, percent);
  }
  const halves = body.split('::');
  if (halves.length > 2) return undefined;
  const compressed = halves.length === 2;
  const head = ipv6Groups(halves[0]!, !compressed);
  const tail = compressed ? ipv6Groups(halves[1]!, true) : [];
  if (head === undefined || tail === undefined) return undefined;
  const explicit = head.length + tail.length;
  if (compressed ? explicit > 7 : explicit !== 8) return undefined;
  const groups = [...head, ...new Array<number>(8 - explicit).fill(0), ...tail];
  let value = 0n;
  for (const group of groups) value = (value << 16n) | BigInt(group);
  return zone === undefined ? { family: 6, value } : { family: 6, value, zone };
}

/**
 * Parses an IP address written the standard way: a strict dotted quad or an IPv6 address
 * (brackets and zone allowed). This is the form of configuration (allow-lists) and of resolver
 * answers.
 */
export function parseIpAddress(text: string): IpAddress | undefined {
  const ipv4 = parseStrictIpv4(text);
  if (ipv4 !== undefined) return { family: 4, value: ipv4 };
  return text.includes(':') ? parseIpv6(text) : undefined;
}

/**
 * Reads a host name as a dialler would: an IPv6 literal (bracketed or not, with or without a
 * zone) or an IPv4 address in any `inet_aton` / WHATWG spelling. Returns undefined when the
 * host is a name that needs resolving.
 *
 * @example
 * parseHostAddress('2130706433');      // { family: 4, value: 2130706433n }
 * parseHostAddress('[::ffff:7f00:1]'); // { family: 6, value: 281472812449793n }
 * parseHostAddress('example.com');     // undefined
 */
export function parseHostAddress(host: string): IpAddress | undefined {
  if (host.includes(':')) return parseIpv6(host);
  const ipv4 = parseIpv4Hostname(host);
  return ipv4 === undefined ? undefined : { family: 4, value: ipv4 };
}

function formatIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

function formatIpv6(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, index) =>
    Number((value >> BigInt(112 - 16 * index)) & 0xffffn),
  );
  // RFC 5952: compress the longest run of two or more zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let start = 0; start < 8;) {
    if (groups[start] !== 0) {
      start += 1;
      continue;
    }
    let end = start;
    while (end < 8 && groups[end] === 0) end += 1;
    if (end - start > bestLength) {
      bestStart = start;
      bestLength = end - start;
    }
    start = end;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart === -1) return hex.join(':');
  const head = hex.slice(0, bestStart).join(':');
  const tail = hex.slice(bestStart + bestLength).join(':');
  return `${head}::${tail}`;
}

/**
 * The canonical text of an address: a dotted quad, or RFC 5952 IPv6 (lower case, longest zero
 * run compressed) followed by its zone if it has one.
 */
export function formatIpAddress(address: IpAddress): string {
  if (address.family === 4) return formatIpv4(address.value);
  const text = formatIpv6(address.value);
  return address.zone === undefined ? text : `${text}%${address.zone}`;
}

/**
 * Parses a CIDR range (`10.0.0.0/8`, `fd00::/8`) or a single address (a /32 or /128). Bits
 * beyond the prefix must be zero, so a typo like `10.0.0.1/8` is reported rather than widened.
 */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const address = parseIpAddress(slash === -1 ? text : text.slice(0, slash));
  if (address === undefined || address.zone !== undefined) return undefined;
  const bits = BITS[address.family];
  let prefix: number = bits;
  if (slash !== -1) {
    const length = text.slice(slash + 1);
    if (!/^(?:0|[1-9][0-9]{0,2})$/.test(length)) return undefined;
    prefix = Number(length);
    if (prefix > bits) return undefined;
  }
  const hostBits = BigInt(bits - prefix);
  if (address.value & ((1n << hostBits) - 1n)) return undefined;
  return { family: address.family, base: address.value, prefix };
}

/** Whether an address lies in a range (of the same family). */
export function cidrContains(range: Cidr, address: IpAddress): boolean {
  if (range.family !== address.family) return false;
  const hostBits = BigInt(BITS[range.family] - range.prefix);
  return address.value >> hostBits === range.base >> hostBits;
}

/** The text of a range, e.g. `10.0.0.0/8`. */
export function formatCidr(range: Cidr): string {
  return `${formatIpAddress({ family: range.family, value: range.base })}/${range.prefix}`;
}
