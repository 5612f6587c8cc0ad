/**
 * Address parsing and formatting, checked against tables and, by property, against the WHATWG
 * URL parser built into Node: the guard must read a host exactly as `new URL()` and a dialler
 * do, whichever of them saw it first.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cidrContains,
  formatIpAddress,
  parseCidr,
  parseHostAddress,
  parseIpAddress,
  parseIpv4Hostname,
  parseIpv6,
  parseStrictIpv4,
} from '../../../src/delivery/ssrf/index.ts';

function ipv4Text(value: bigint | undefined): string | undefined {
  return value === undefined ? undefined : formatIpAddress({ family: 4, value });
}

/** The host `new URL()` makes of a spelling, or undefined when the URL is invalid. */
function whatwgHost(host: string): string | undefined {
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return undefined;
  }
}

describe('parseIpv4Hostname reads host names as inet_aton and WHATWG URL do', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['0X7F.0X0.0X0.0X1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['10.1.1', '10.1.0.1'],
    ['10.65535', '10.0.255.255'],
    ['0x', '0.0.0.0'],
    ['00000000000000000000000177.1', '127.0.0.1'],
    ['0x00000000000000007f.1', '127.0.0.1'],
    ['4294967295', '255.255.255.255'],
    ['127.0.0.1.', '127.0.0.1'],
  ])('%s is %s, as new URL() says', (spelling, expected) => {
    expect(ipv4Text(parseIpv4Hostname(spelling))).toBe(expected);
    expect(whatwgHost(spelling)).toBe(expected);
  });

  it.each([
    '4294967296',
    '256.0.0.1',
    '1.2.3.4.5',
    '08.0.0.1',
    '0x7g.1',
    '1..1',
    '',
    '.',
    'a.b.c.d',
    '1.2.3.-4',
    ' 1.2.3.4',
    '1.256.1',
    '1.2.65536',
  ])('%j is not an IPv4 address', (spelling) => {
    expect(parseIpv4Hostname(spelling)).toBeUndefined();
  });

  it('agrees with new URL() on random spellings of random addresses', () => {
    const part = (value: number) =>
      fc.constantFrom(
        `${value}`,
        `0${value.toString(8)}`,
        `0x${value.toString(16)}`,
        `0X${value.toString(16).toUpperCase()}`,
      );
    const spelling = fc
      .tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 1, max: 4 }))
      .chain(([value, parts]) => {
        const bytes = [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
        const head = bytes.slice(0, parts - 1);
        const rest = bytes.slice(parts - 1).reduce((total, byte) => total * 256 + byte, 0);
        return fc.tuple(fc.constant(value), fc.tuple(...[...head, rest].map(part)));
      });
    fc.assert(
      fc.property(spelling, ([value, parts]) => {
        const text = parts.join('.');
        const expected = formatIpAddress({ family: 4, value: BigInt(value) });
        expect(ipv4Text(parseIpv4Hostname(text))).toBe(expected);
        expect(whatwgHost(text)).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});

describe('parseStrictIpv4 takes only four decimal octets', () => {
  it('accepts dotted quads and refuses the rest', () => {
    expect(ipv4Text(parseStrictIpv4('192.168.0.1'))).toBe('192.168.0.1');
    for (const text of ['010.0.0.1', '127.1', '2130706433', '0x7f.0.0.1', '1.2.3.256', '1.2.3.4.']) {
      expect(parseStrictIpv4(text)).toBeUndefined();
    }
  });
});

describe('parseIpv6', () => {
  it.each([
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['[::1]', '::1'],
    ['2001:DB8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['2001:0db8:0000:0000:0000:0000:0002:0001', '2001:db8::2:1'],
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
    ['::ffff:127.0.0.1', '::ffff:7f00:1'],
    ['0:0:0:0:0:ffff:1.2.3.4', '::ffff:102:304'],
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
    ['fe80::1%eth0', 'fe80::1%eth0'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
  ])('%s is %s', (text, expected) => {
    const address = parseIpv6(text);
    expect(address).toBeDefined();
    expect(formatIpAddress(address!)).toBe(expected);
  });

  it.each([
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '1::2::3',
    ':1::',
    '1:',
    ':::',
    '12345::',
    'g::1',
    '::ffff:1.2.3',
    '::1.2.3.4:5',
    '::ffff:01.2.3.4',
    'fe80::1%',
    '1:2:3:4:5:6:7:8::',
    '[::1',
  ])('%j is not an IPv6 address', (text) => {
    expect(parseIpv6(text)).toBeUndefined();
  });

  it('formats like the WHATWG URL serializer (RFC 5952) for random addresses', () => {
    const group = fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 0, max: 0xffff }));
    fc.assert(
      fc.property(fc.array(group, { minLength: 8, maxLength: 8 }), (groups) => {
        const full = groups.map((g) => g.toString(16)).join(':');
        const address = parseIpv6(full);
        expect(address).toBeDefined();
        expect(formatIpAddress(address!)).toBe(whatwgHost(`[${full}]`)!.slice(1, -1));
        expect(parseIpv6(formatIpAddress(address!))).toEqual(address);
      }),
      { numRuns: 500 },
    );
  });
});

describe('parseIpAddress and parseHostAddress', () => {
  it('parseIpAddress is strict about IPv4, parseHostAddress reads it as a dialler would', () => {
    expect(parseIpAddress('127.1')).toBeUndefined();
    expect(parseHostAddress('127.1')).toEqual({ family: 4, value: 0x7f000001n });
    expect(parseIpAddress('::1')).toEqual({ family: 6, value: 1n });
    expect(parseHostAddress('[::1]')).toEqual({ family: 6, value: 1n });
    expect(parseHostAddress('example.com')).toBeUndefined();
    expect(parseHostAddress('127.0.0.1.nip.io')).toBeUndefined();
  });
});

describe('parseCidr and cidrContains', () => {
  it('parses ranges and single addresses', () => {
    expect(parseCidr('10.0.0.0/8')).toEqual({ family: 4, base: 0x0a000000n, prefix: 8 });
    expect(parseCidr('10.0.0.5')).toEqual({ family: 4, base: 0x0a000005n, prefix: 32 });
    expect(parseCidr('fd00::/8')).toMatchObject({ family: 6, prefix: 8 });
    expect(parseCidr('0.0.0.0/0')).toEqual({ family: 4, base: 0n, prefix: 0 });
  });

  it.each([
    '10.0.0.1/8',
    '10.0.0.0/33',
    '::1/129',
    '10.0.0.0/',
    '10.0.0.0/08',
    '10.0.0.0/-1',
    '127.1/8',
    'fe80::1%eth0/128',
    'x/8',
  ])('%j is not a range', (text) => {
    expect(parseCidr(text)).toBeUndefined();
  });

  it('tells what is inside, by family', () => {
    const range = parseCidr('172.16.0.0/12')!;
    expect(cidrContains(range, parseIpAddress('172.31.255.255')!)).toBe(true);
    expect(cidrContains(range, parseIpAddress('172.32.0.0')!)).toBe(false);
    expect(cidrContains(range, parseIpAddress('::ffff:172.16.0.1')!)).toBe(false);
    expect(cidrContains(parseCidr('::/0')!, parseIpAddress('2606:4700::1111')!)).toBe(true);
  });
});
