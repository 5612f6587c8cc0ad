/**
 * The URL checks and the policy (allow-list, allowPrivate) as tables. Pure: nothing is
 * resolved or dialled.
 */
import { describe, expect, it } from 'vitest';
import {
  type AddressCategory,
  checkWebhookUrl,
  judgeAddress,
  type SsrfPolicy,
  type SsrfRefusalCode,
  SsrfRefusedError,
  validateSsrfPolicy,
} from '../../../src/delivery/ssrf/index.ts';

function refusalOf(url: string, policy: SsrfPolicy): SsrfRefusedError | undefined {
  try {
    checkWebhookUrl(url, policy);
    return undefined;
  } catch (error) {
    if (error instanceof SsrfRefusedError) return error;
    throw error;
  }
}

const ALLOWED_BY_DEFAULT = [
  'https://hooks.example.com/cb',
  'http://hooks.example.com:8080/cb?token=abc#frag',
  'HTTPS://HOOKS.EXAMPLE.COM/',
  'http://8.8.8.8/',
  'http://[2606:4700::1111]:8443/',
  'http://@hooks.example.com/', // an empty userinfo carries nothing
  // A name passes the URL check whatever it will resolve to: that is checked when dialled.
  'http://127.0.0.1.nip.io/',
  'http://localtest.me/',
];

type RefusedRow = readonly [url: string, code: SsrfRefusalCode, category?: AddressCategory];

const REFUSED_BY_DEFAULT: RefusedRow[] = [
  ['ftp://example.com/', 'url_scheme'],
  ['file:///etc/passwd', 'url_scheme'],
  ['gopher://example.com:70/', 'url_scheme'],
  ['ws://example.com/', 'url_scheme'],
  ['javascript:alert(1)', 'url_scheme'],
  ['data:text/plain,hi', 'url_scheme'],
  ['not a url', 'url_invalid'],
  ['/relative/path', 'url_invalid'],
  ['', 'url_invalid'],
  ['http://256.0.0.1/', 'url_invalid'],
  ['http://user:secret@example.com/', 'url_credentials'],
  ['http://user@example.com/', 'url_credentials'],
  ['http://:secret@example.com/', 'url_credentials'],
  ['https://trusted.example@evil.example/', 'url_credentials'],
  ['http://127.0.0.1/', 'address_refused', 'loopback'],
  ['http://127.0.0.1:9000/hook', 'address_refused', 'loopback'],
  ['http://0177.0.0.1/', 'address_refused', 'loopback'],
  ['http://2130706433/', 'address_refused', 'loopback'],
  ['http://0x7f.1/', 'address_refused', 'loopback'],
  ['http://127.1/', 'address_refused', 'loopback'],
  ['http://%31%32%37.0.0.1/', 'address_refused', 'loopback'],
  ['http://127。0。0。1/', 'address_refused', 'loopback'],
  ['http://[::1]/', 'address_refused', 'loopback'],
  ['http://[::ffff:127.0.0.1]/', 'address_refused', 'loopback'],
  ['http://[::ffff:7f00:1]/', 'address_refused', 'loopback'],
  ['http://[2002:7f00:1::]/', 'address_refused', 'loopback'],
  ['http://localhost/', 'address_refused', 'loopback'],
  ['http://LOCALHOST.:3000/', 'address_refused', 'loopback'],
  ['http://api.localhost/', 'address_refused', 'loopback'],
  ['http://localhost../', 'address_refused', 'loopback'],
  ['http://ｌｏｃａｌｈｏｓｔ/', 'address_refused', 'loopback'], // full-width, mapped by IDNA
  ['http://local%68ost/', 'address_refused', 'loopback'],
  ['http://0x7f.0.0.1./', 'address_refused', 'loopback'],
  ['http://[0:0:0:0:0:FFFF:127.0.0.1]/', 'address_refused', 'loopback'],
  ['http://[::127.0.0.1]/', 'address_refused', 'loopback'],
  ['http://[::ffff:0:127.0.0.1]/', 'address_refused', 'loopback'],
  ['http://[64:ff9b::10.0.0.1]/', 'address_refused', 'private'],
  ['http://[2002:c0a8:101::1]/', 'address_refused', 'private'],
  ['http://[fec0::1]/', 'address_refused', 'private'],
  ['http://[fe80::a9fe:a9fe]/', 'address_refused', 'metadata'],
  ['http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'address_refused', 'reserved'],
  ['http://[100::1]/', 'address_refused', 'reserved'],
  ['http://198.18.0.1/', 'address_refused', 'reserved'],
  ['http://203.0.113.9/', 'address_refused', 'reserved'],
  ['http://0.0.0.0/', 'address_refused', 'unspecified'],
  ['http://0/', 'address_refused', 'unspecified'],
  ['http://[::]/', 'address_refused', 'unspecified'],
  ['http://10.0.0.5/', 'address_refused', 'private'],
  ['http://10.1.1/', 'address_refused', 'private'],
  ['http://172.16.0.1/', 'address_refused', 'private'],
  ['http://192.168.1.1/', 'address_refused', 'private'],
  ['http://169.254.1.1/', 'address_refused', 'link-local'],
  ['http://[fe80::1]/', 'address_refused', 'link-local'],
  ['http://169.254.169.254/latest/meta-data/', 'address_refused', 'metadata'],
  ['http://2852039166/', 'address_refused', 'metadata'],
  ['http://[fd00:ec2::254]/', 'address_refused', 'metadata'],
  ['http://[64:ff9b::a9fe:a9fe]/', 'address_refused', 'metadata'],
  ['http://100.100.100.200/', 'address_refused', 'metadata'],
  ['http://100.64.0.1/', 'address_refused', 'cgnat'],
  ['http://[fd12::1]/', 'address_refused', 'ula'],
  ['http://224.0.0.1/', 'address_refused', 'multicast'],
  ['http://[ff02::1]/', 'address_refused', 'multicast'],
  ['http://192.0.2.1/', 'address_refused', 'reserved'],
  ['http://255.255.255.255/', 'address_refused', 'reserved'],
  ['http://[2001:db8::1]/', 'address_refused', 'reserved'],
];

describe('checkWebhookUrl with the default policy', () => {
  it.each(ALLOWED_BY_DEFAULT)('allows %s', (url) => {
    expect(refusalOf(url, {})).toBeUndefined();
  });

  it.for(REFUSED_BY_DEFAULT)('refuses %s (%s %s)', ([url, code, category]) => {
    const refusal = refusalOf(url, {});
    expect(refusal?.code).toBe(code);
    expect(refusal?.message).toMatch(/^refused by the SSRF guard: /);
    if (category !== undefined) expect(refusal?.category).toBe(category);
  });

  it('says which address, category and range refused it', () => {
    expect(refusalOf('http://10.0.0.5/', {})?.message).toBe(
      'refused by the SSRF guard: 10.0.0.5 is private (in 10.0.0.0/8); allowPrivate (--allow-private-urls) or an allow-list entry opens it',
    );
    const mapped = refusalOf('http://[::ffff:169.254.169.254]/', {});
    expect(mapped?.address).toBe('::ffff:a9fe:a9fe');
    expect(mapped?.message).toContain(
      'is metadata (a cloud instance-metadata endpoint, ipv4-mapped 169.254.169.254',
    );
    expect(mapped?.message).toContain('only an allow-list entry opens it');
  });

  it('keeps credentials out of the message', () => {
    expect(refusalOf('http://user:hunter2@example.com/', {})?.message).not.toContain('hunter2');
  });

  it('returns a parsed copy of what it checked', () => {
    const original = new URL('https://hooks.example.com/cb');
    const checked = checkWebhookUrl(original);
    expect(checked.href).toBe(original.href);
    expect(checked).not.toBe(original);
  });
});

describe('checkWebhookUrl with allowPrivate (--allow-private-urls)', () => {
  const policy: SsrfPolicy = { allowPrivate: true };

  it.each([
    'http://127.0.0.1:9000/',
    'http://localhost:9000/',
    'http://[::1]/',
    'http://0.0.0.0/',
    'http://10.0.0.5/',
    'http://192.168.1.1/',
    'http://[fe80::1]/',
    'http://100.64.0.1/',
    'http://[fd12::1]/',
  ])('allows %s', (url) => {
    expect(refusalOf(url, policy)).toBeUndefined();
  });

  it.each([
    ['http://169.254.169.254/', 'metadata'],
    ['http://[fd00:ec2::254]/', 'metadata'],
    ['http://169.254.170.23/', 'metadata'],
    ['http://[fd00:ec2::23]/', 'metadata'],
    ['http://169.254.42.42/', 'metadata'],
    ['http://224.0.0.1/', 'multicast'],
    ['http://192.0.2.1/', 'reserved'],
    ['http://198.18.0.1/', 'reserved'],
    ['http://240.0.0.1/', 'reserved'],
    ['http://[2001:db8::1]/', 'reserved'],
    ['http://[64:ff9b::a9fe:a9fe]/', 'metadata'],
    // IPv6 metadata endpoints: OpenStack's is link-local, the others ULA, both opened by allowPrivate
    ['http://[fe80::a9fe:a9fe]/', 'metadata'],
    ['http://[fd00:c1::a9fe:a9fe]/', 'metadata'],
    ['http://[fd00:a9fe:a9fe::1]/', 'metadata'],
  ])('still refuses %s (%s)', (url, category) => {
    expect(refusalOf(url, policy)?.category).toBe(category);
  });

  it('does not open schemes or credentials', () => {
    expect(refusalOf('file:///etc/passwd', policy)?.code).toBe('url_scheme');
    expect(refusalOf('http://a:b@127.0.0.1/', policy)?.code).toBe('url_credentials');
  });
});

describe('the allow-list', () => {
  it.each([
    [['10.20.0.0/16'], 'http://10.20.1.2/', true],
    [['10.20.0.0/16'], 'http://10.21.0.1/', false],
    [['10.20.0.0/16'], 'http://[::ffff:10.20.1.2]/', true],
    [['10.0.0.5'], 'http://10.0.0.5/', true],
    [['10.0.0.5'], 'http://10.0.0.6/', false],
    [['169.254.169.254'], 'http://169.254.169.254/', true],
    [['[::1]'], 'http://[::1]/', true],
    [['::1'], 'http://127.0.0.1/', false],
    [['fd00::/8'], 'http://[fd12::1]/', true],
    [['localhost'], 'http://localhost/', true],
    [['LocalHost.'], 'http://localhost/', true],
    [['*.localhost'], 'http://api.localhost/', true],
    [['*.localhost'], 'http://localhost/', false],
    [['hooks.corp.example'], 'http://10.0.0.5/', false],
    // The name dials what it resolves to, checked then; an entry for its address opens it.
    [['127.0.0.1', '::1'], 'http://localhost/', true],
    [['127.0.0.0/8'], 'http://api.localhost/', true],
    [['10.0.0.0/8'], 'http://localhost/', false],
    // Only the IPv4-mapped form is the same host; 6to4, NAT64 and the others reach other hosts.
    [['10.0.0.5'], 'http://[::ffff:a00:5]/', true],
    [['10.0.0.5'], 'http://[2002:a00:5:beef::1234]/', false],
    [['10.0.0.5'], 'http://[64:ff9b::a00:5]/', false],
    [['10.0.0.5'], 'http://[::a00:5]/', false],
    [['127.0.0.1'], 'http://[2002:7f00:1:abcd::1]/', false],
    [['2002:a00:5::/48'], 'http://[2002:a00:5:beef::1234]/', true],
    // A mapped entry is its IPv4 range, and a mapped address is matched as its IPv4 address.
    [['::ffff:10.0.0.0/104'], 'http://10.0.0.5/', true],
    [['::ffff:a00:5'], 'http://10.0.0.5/', true],
    [['::ffff:10.0.0.5'], 'http://[::ffff:a00:5]/', true],
    [['::ffff:10.0.0.0/104'], 'http://172.16.0.1/', false],
    [['0.0.0.0/0'], 'http://[::ffff:10.0.0.5]/', true],
    // An IPv6 range wider than the mapped block opens no IPv4 address, metadata least of all.
    [['::/0'], 'http://[::ffff:169.254.169.254]/', false],
    [['::/0'], 'http://169.254.169.254/', false],
    [['::/0'], 'http://[fd12::1]/', true],
    [['::/64'], 'http://[::ffff:127.0.0.1]/', false],
    // Only an entry opens a metadata endpoint, and one that covers it does.
    [['fe80::/10'], 'http://[fe80::a9fe:a9fe]/', true],
  ] as const)('%j: %s allowed is %s', (allow, url, allowed) => {
    expect(refusalOf(url, { allow }) === undefined).toBe(allowed);
  });

  it('opens the addresses of an allow-listed name (checked at dial time)', () => {
    const policy: SsrfPolicy = { allow: ['hooks.corp.example', '*.svc.internal'] };
    expect(judgeAddress(policy, '10.0.0.5', 'hooks.corp.example')).toMatchObject({
      allowed: true,
      by: 'allow-list entry hooks.corp.example',
    });
    expect(judgeAddress(policy, '10.0.0.5', 'HOOKS.corp.example.')).toMatchObject({ allowed: true });
    expect(judgeAddress(policy, '10.0.0.5', 'a.b.svc.internal')).toMatchObject({ allowed: true });
    expect(judgeAddress(policy, '10.0.0.5', 'svc.internal')).toMatchObject({ allowed: false });
    expect(judgeAddress(policy, '10.0.0.5', 'evil.example')).toMatchObject({ allowed: false });
    expect(judgeAddress(policy, '10.0.0.5')).toMatchObject({ allowed: false });
  });

  it.each([
    '10.0.0.1/8',
    '10.0.0.0/33',
    '::1/129',
    '127.1',
    '0x7f.0.0.1',
    '2130706433',
    'bad host!',
    '',
    '*.',
    'a..b',
    'fe80::zz',
  ])('rejects the entry %j up front', (entry) => {
    expect(() => validateSsrfPolicy({ allow: [entry] })).toThrow(TypeError);
  });
});
