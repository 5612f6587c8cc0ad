/**
 * The classifier against a table of addresses: every range, its edges, the IPv6 forms that
 * carry an IPv4 address and the odd IPv4 spellings. Pure functions only: nothing is dialled.
 */
import { describe, expect, it } from 'vitest';
import {
  type AddressCategory,
  classifyAddress,
  embeddedIpv4,
  parseIpAddress,
} from '../../../src/delivery/ssrf/index.ts';

type Row = readonly [address: string, category: AddressCategory, range?: string];

const IPV4: Row[] = [
  // loopback, and its edges
  ['127.0.0.1', 'loopback', '127.0.0.0/8'],
  ['127.255.255.255', 'loopback'],
  ['126.255.255.255', 'public'],
  ['128.0.0.0', 'public'],
  // 0.0.0.0/8
  ['0.0.0.0', 'unspecified', '0.0.0.0/8'],
  ['0.1.2.3', 'unspecified'],
  ['1.0.0.0', 'public'],
  // 10/8
  ['10.0.0.0', 'private', '10.0.0.0/8'],
  ['10.0.0.5', 'private'],
  ['10.255.255.255', 'private'],
  ['9.255.255.255', 'public'],
  ['11.0.0.0', 'public'],
  // 172.16/12
  ['172.15.255.255', 'public'],
  ['172.16.0.0', 'private', '172.16.0.0/12'],
  ['172.20.1.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.0', 'public'],
  // 192.168/16
  ['192.167.255.255', 'public'],
  ['192.168.0.0', 'private', '192.168.0.0/16'],
  ['192.168.1.1', 'private'],
  ['192.168.255.255', 'private'],
  ['192.169.0.0', 'public'],
  // link-local and metadata
  ['169.254.0.0', 'link-local', '169.254.0.0/16'],
  ['169.254.1.1', 'link-local'],
  ['169.254.255.255', 'link-local'],
  ['169.253.255.255', 'public'],
  ['169.255.0.0', 'public'],
  ['169.254.169.254', 'metadata', '169.254.169.254/32'],
  ['169.254.169.253', 'link-local'],
  ['169.254.170.2', 'metadata'],
  ['169.254.170.23', 'metadata'],
  ['169.254.42.42', 'metadata'],
  ['169.254.0.23', 'metadata'],
  ['169.254.170.22', 'link-local'],
  ['100.100.100.200', 'metadata'],
  ['192.0.0.192', 'metadata'],
  ['168.63.129.16', 'metadata'],
  // 100.64/10
  ['100.63.255.255', 'public'],
  ['100.64.0.0', 'cgnat', '100.64.0.0/10'],
  ['100.100.100.100', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  ['100.128.0.0', 'public'],
  // multicast 224/4
  ['223.255.255.255', 'public'],
  ['224.0.0.0', 'multicast', '224.0.0.0/4'],
  ['224.0.0.251', 'multicast'],
  ['239.255.255.255', 'multicast'],
  // reserved
  ['240.0.0.0', 'reserved', '240.0.0.0/4'],
  ['250.1.2.3', 'reserved'],
  ['255.255.255.255', 'reserved'],
  ['192.0.0.1', 'reserved', '192.0.0.0/24'],
  ['192.0.2.1', 'reserved', '192.0.2.0/24'],
  ['192.0.3.0', 'public'],
  ['192.88.99.1', 'reserved'],
  ['198.17.255.255', 'public'],
  ['198.18.0.0', 'reserved', '198.18.0.0/15'],
  ['198.19.255.255', 'reserved'],
  ['198.20.0.0', 'public'],
  ['198.51.100.7', 'reserved', '198.51.100.0/24'],
  ['203.0.113.9', 'reserved', '203.0.113.0/24'],
  ['192.0.0.9', 'reserved', '192.0.0.0/24'], // PCP anycast: no receiver lives there
  ['192.0.0.170', 'reserved'], // NAT64 discovery
  // Globally reachable per the IANA registry (AS112, AMT): public like any other host.
  ['192.31.196.1', 'public'],
  ['192.52.193.1', 'public'],
  ['192.175.48.1', 'public'],
  // public examples (classification only)
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['93.184.216.34', 'public'],
];

const IPV4_SPELLINGS: Row[] = [
  ['2130706433', 'loopback'], // decimal 127.0.0.1
  ['0177.0.0.1', 'loopback'], // octal first part
  ['0x7f.1', 'loopback'], // hex, short form
  ['0x7f000001', 'loopback'],
  ['0x7F.0.0.1', 'loopback'],
  ['127.1', 'loopback'],
  ['127.0.1', 'loopback'],
  ['017700000001', 'loopback'], // octal whole
  ['0', 'unspecified'],
  ['0x0', 'unspecified'],
  ['10.1.1', 'private'], // 10.1.0.1
  ['167772165', 'private'], // 10.0.0.5
  ['012.0.0.5', 'private'], // 012 octal = 10
  ['0xa9.0xfe.0xa9.0xfe', 'metadata'],
  ['2852039166', 'metadata'], // 169.254.169.254
  ['0251.0376.0251.0376', 'metadata'],
  ['169.254.43518', 'metadata'],
  ['127.0.0.1.', 'loopback'], // trailing dot
  ['134744072', 'public'], // 8.8.8.8
];

const IPV6: Row[] = [
  ['::1', 'loopback', '::1/128'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['[::1]', 'loopback'],
  ['::', 'unspecified', '::/128'],
  ['[::]', 'unspecified'],
  ['fc00::', 'ula', 'fc00::/7'],
  ['fd12:3456:789a::1', 'ula'],
  ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'ula'],
  ['fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
  ['fe00::1', 'reserved'],
  ['fe80::', 'link-local', 'fe80::/10'],
  ['fe80::1%eth0', 'link-local'],
  ['[fe80::1%25eth0]', 'link-local'],
  ['febf:ffff::1', 'link-local'],
  ['fec0::1', 'private', 'fec0::/10'],
  ['ff00::', 'multicast', 'ff00::/8'],
  ['ff02::1', 'multicast'],
  ['fd00:ec2::254', 'metadata', 'fd00:ec2::254/128'],
  ['fd00:ec2::253', 'ula'],
  ['fd20:ce::254', 'metadata'],
  ['fd00:ec2::23', 'metadata'],
  ['fd00:42::42', 'metadata'],
  ['fd00:c1::a9fe:a9fe', 'metadata'], // Oracle Cloud
  ['fd00:a9fe:a9fe::1', 'metadata'], // Akamai (Linode)
  // OpenStack's IPv6 metadata address sits in link-local, which allowPrivate opens.
  ['fe80::a9fe:a9fe', 'metadata', 'fe80::a9fe:a9fe/128'],
  ['fe80::a9fe:a9fe%eth0', 'metadata'],
  ['FE80:0000::A9FE:A9FE', 'metadata'],
  ['fe80::a9fe:a9fd', 'link-local'],
  // spellings: upper case, leading zeros, no compression, compression anywhere
  ['0000:0000:0000:0000:0000:0000:0000:0001', 'loopback'],
  ['FEC0::1', 'private'],
  ['feff:ffff::1', 'private'],
  ['fe80:0:0:0::1', 'link-local'],
  ['2001:db8::1', 'reserved', '2001:db8::/32'],
  ['100::1', 'reserved', '100::/64'],
  ['100:0:0:1::1', 'reserved'], // outside 100::/64 and outside 2000::/3
  ['2001::1', 'reserved', '2001::/23'], // Teredo
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved', '2001::/23'], // Teredo, a real-looking one
  ['2001:1ff:ffff::1', 'reserved', '2001::/23'],
  ['2001:200::1', 'public'],
  ['100::', 'reserved', '100::/64'],
  ['64:ff9b:1:ffff::1', 'reserved', '64:ff9b:1::/48'],
  ['64:ff9b:2::1', 'reserved', '::/3'],
  ['3fff::1', 'reserved', '3fff::/20'],
  ['5f00::1', 'reserved'],
  ['64:ff9b:1::1', 'reserved', '64:ff9b:1::/48'],
  ['4000::1', 'reserved', '4000::/3'],
  ['1:2:3:4:5:6:7:8', 'reserved', '::/3'],
  // public examples (classification only)
  ['2606:4700::1111', 'public'],
  ['2a00:1450:4001:81b::200e', 'public'],
  ['2001:4860:4860::8888', 'public'],
];

const EMBEDDED: (readonly [address: string, category: AddressCategory, form: string, ipv4: string])[] = [
  ['::ffff:127.0.0.1', 'loopback', 'ipv4-mapped', '127.0.0.1'],
  ['::ffff:7f00:1', 'loopback', 'ipv4-mapped', '127.0.0.1'],
  ['0:0:0:0:0:ffff:7f00:1', 'loopback', 'ipv4-mapped', '127.0.0.1'],
  ['::ffff:10.0.0.5', 'private', 'ipv4-mapped', '10.0.0.5'],
  ['::ffff:169.254.169.254', 'metadata', 'ipv4-mapped', '169.254.169.254'],
  ['::ffff:0.0.0.0', 'unspecified', 'ipv4-mapped', '0.0.0.0'],
  ['::ffff:8.8.8.8', 'public', 'ipv4-mapped', '8.8.8.8'],
  ['0000:0000:0000:0000:0000:FFFF:7F00:0001', 'loopback', 'ipv4-mapped', '127.0.0.1'],
  ['::FFFF:A9FE:A9FE', 'metadata', 'ipv4-mapped', '169.254.169.254'],
  ['::ffff:198.18.0.1', 'reserved', 'ipv4-mapped', '198.18.0.1'],
  ['::ffff:100.64.0.1', 'cgnat', 'ipv4-mapped', '100.64.0.1'],
  ['::ffff:0:a9fe:a9fe', 'metadata', 'ipv4-translated', '169.254.169.254'],
  ['::0:10.0.0.5', 'private', 'ipv4-compatible', '10.0.0.5'],
  ['::127.0.0.1', 'loopback', 'ipv4-compatible', '127.0.0.1'],
  ['::7f00:1', 'loopback', 'ipv4-compatible', '127.0.0.1'],
  ['::ffff:0:7f00:1', 'loopback', 'ipv4-translated', '127.0.0.1'],
  // Deprecated forms route nowhere as IPv6: a public IPv4 inside does not make them public.
  ['::8.8.8.8', 'reserved', 'ipv4-compatible', '8.8.8.8'],
  ['::ffff:0:8.8.8.8', 'reserved', 'ipv4-translated', '8.8.8.8'],
  ['64:ff9b::a9fe:a9fe', 'metadata', 'nat64', '169.254.169.254'],
  ['64:ff9b::127.0.0.1', 'loopback', 'nat64', '127.0.0.1'],
  ['64:ff9b::c0a8:101', 'private', 'nat64', '192.168.1.1'],
  ['64:ff9b::808:808', 'public', 'nat64', '8.8.8.8'],
  ['64:ff9b::0a00:0001', 'private', 'nat64', '10.0.0.1'],
  ['64:ff9b::e000:1', 'multicast', 'nat64', '224.0.0.1'],
  ['2002:7f00:1::', 'loopback', '6to4', '127.0.0.1'],
  ['2002:a00:5::1', 'private', '6to4', '10.0.0.5'],
  ['2002:a9fe:a9fe:1:2:3:4:5', 'metadata', '6to4', '169.254.169.254'],
  ['2002:6440:1::', 'cgnat', '6to4', '100.64.0.1'],
  ['2002:808:808::1', 'public', '6to4', '8.8.8.8'],
  ['2002:c0a8:101::', 'private', '6to4', '192.168.1.1'],
  ['2002:ffff:ffff::', 'reserved', '6to4', '255.255.255.255'],
  ['2002:e000:1::', 'multicast', '6to4', '224.0.0.1'],
  ['2002:0:0::1', 'unspecified', '6to4', '0.0.0.0'],
];

describe('classifyAddress: IPv4 ranges and their edges', () => {
  it.for(IPV4)('%s is %s', ([address, category, range]) => {
    const classification = classifyAddress(address);
    expect(classification.category).toBe(category);
    expect(classification.family).toBe(4);
    if (range !== undefined) expect(classification.range).toBe(range);
    if (category === 'public') expect(classification.range).toBeUndefined();
  });
});

describe('classifyAddress: IPv4 as inet_aton and the WHATWG URL parser read a host name', () => {
  it.for(IPV4_SPELLINGS)('%s is %s', ([address, category]) => {
    expect(classifyAddress(address).category).toBe(category);
  });

  it('reports the canonical address it classified', () => {
    expect(classifyAddress('0x7f.1').address).toBe('127.0.0.1');
    expect(classifyAddress('10.1.1').address).toBe('10.1.0.1');
    expect(classifyAddress('2852039166').address).toBe('169.254.169.254');
  });
});

describe('classifyAddress: IPv6', () => {
  it.for(IPV6)('%s is %s', ([address, category, range]) => {
    const classification = classifyAddress(address);
    expect(classification.category).toBe(category);
    expect(classification.family).toBe(6);
    if (range !== undefined) expect(classification.range).toBe(range);
  });

  it('keeps the zone in the canonical address', () => {
    expect(classifyAddress('FE80:0:0:0:0:0:0:1%eth0').address).toBe('fe80::1%eth0');
  });
});

describe('classifyAddress: IPv6 forms carrying an IPv4 address take its category', () => {
  it.each(EMBEDDED)('%s is %s (%s %s)', (address, category, form, ipv4) => {
    const classification = classifyAddress(address);
    expect(classification.category).toBe(category);
    expect(classification.embedded).toEqual({ form, ipv4 });
  });

  it('does not treat :: and ::1 as IPv4-compatible addresses', () => {
    expect(embeddedIpv4(parseIpAddress('::')!)).toBeUndefined();
    expect(embeddedIpv4(parseIpAddress('::1')!)).toBeUndefined();
    expect(classifyAddress('::2').embedded).toEqual({ form: 'ipv4-compatible', ipv4: '0.0.0.2' });
  });
});

describe('classifyAddress: what is not an address', () => {
  it.each([
    '',
    'example.com',
    'localhost',
    '256.0.0.1',
    '1.2.3.4.5',
    '08.0.0.1',
    '1::2::3',
    '::ffff:1.2.3',
    'fe80::1%',
    '[127.0.0.1]',
    ' 127.0.0.1',
    '127.0.0.1/8',
  ])('%j throws a TypeError', (text) => {
    expect(() => classifyAddress(text)).toThrow(TypeError);
  });
});
