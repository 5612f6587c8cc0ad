/**
 * The Host check against DNS rebinding, as a pure function: which Host values are IP literals,
 * loopback names or other names, what the allow-list takes, and the hint told once per host.
 */
import { describe, expect, it } from 'vitest';
import {
  allowedHostsOf,
  classifyHost,
  hostAllowed,
  hostHint,
  oncePerHost,
} from '../../src/receiver/index.ts';

describe('classifyHost', () => {
  it.each([
    ['127.0.0.1', 'ip', '127.0.0.1'],
    ['127.0.0.1:9000', 'ip', '127.0.0.1'],
    ['10.1.2.3:80', 'ip', '10.1.2.3'],
    ['127.0.0.1.:9000', 'ip', '127.0.0.1'],
    ['[::1]', 'ip', '::1'],
    ['[::1]:8080', 'ip', '::1'],
    ['[::FFFF:127.0.0.1]:1', 'ip', '::ffff:127.0.0.1'],
    ['[fe80::1%25eth0]:9000', 'ip', 'fe80::1%25eth0'],
    ['localhost', 'loopback', 'localhost'],
    ['localhost:9000', 'loopback', 'localhost'],
    ['LocalHost.:9000', 'loopback', 'localhost'],
    ['app.localhost:3000', 'loopback', 'app.localhost'],
    ['rebind.test', 'name', 'rebind.test'],
    ['Rebind.TEST.:443', 'name', 'rebind.test'],
    ['localhost.rebind.test', 'name', 'localhost.rebind.test'],
    ['127.0.0.1.rebind.test', 'name', '127.0.0.1.rebind.test'],
    // Not canonical IPv4: browsers never send these, and they are no IP literal here.
    ['127.1', 'name', '127.1'],
  ])('reads %j as %s %j', (value, kind, name) => {
    expect(classifyHost(value)).toEqual({ kind, name });
  });

  it.each([
    '',
    ':9000',
    '::1',
    '[::1',
    '[::1]x',
    '[not-v6]',
    'localhost..',
    'a b',
    'evil.test@127.0.0.1',
    '127.0.0.1/x',
    'host:port',
    'host:123456',
    'bücher.example',
    'x'.repeat(300),
  ])('reads %j as invalid', (value) => {
    expect(classifyHost(value).kind).toBe('invalid');
  });
});

describe('hostAllowed', () => {
  const none = allowedHostsOf();

  it('answers IP literals and loopback names, with or without a port, and no others', () => {
    for (const host of ['127.0.0.1', '127.0.0.1:1', '192.168.1.5:9000', '[::1]', '[::1]:8080']) {
      expect(hostAllowed(host, none), host).toBe(true);
    }
    for (const host of ['localhost', 'localhost:9000', 'LOCALHOST.', 'app.localhost:3000']) {
      expect(hostAllowed(host, none), host).toBe(true);
    }
    for (const host of ['rebind.test', 'rebind.test:9000', 'localhost.rebind.test', '127.1', '']) {
      expect(hostAllowed(host, none), host).toBe(false);
    }
  });

  it('answers a request without a Host: it names no site, and a browser always sends one', () => {
    expect(hostAllowed(undefined, none)).toBe(true);
  });

  it('answers a name given, in any case, with a trailing dot, with or without a port', () => {
    const allowed = allowedHostsOf(['Hooks.Example.com.']);
    for (const host of ['hooks.example.com', 'HOOKS.example.COM:443', 'hooks.example.com.:8080']) {
      expect(hostAllowed(host, allowed), host).toBe(true);
    }
    for (const host of ['example.com', 'a.hooks.example.com', 'hooks.example.com.evil.test']) {
      expect(hostAllowed(host, allowed), host).toBe(false);
    }
  });

  it('answers a domain given as .example.com and every name under it, and nothing that only ends alike', () => {
    const allowed = allowedHostsOf(['.tunnel.example']);
    for (const host of ['tunnel.example', 'abc.tunnel.example:443', 'a.b.tunnel.example']) {
      expect(hostAllowed(host, allowed), host).toBe(true);
    }
    for (const host of ['eviltunnel.example', 'tunnel.example.evil.test', 'example']) {
      expect(hostAllowed(host, allowed), host).toBe(false);
    }
  });

  it('answers any Host with *, even one no browser would send', () => {
    const any = allowedHostsOf(['*']);
    for (const host of ['rebind.test', 'whatever:1', 'a b']) expect(hostAllowed(host, any), host).toBe(true);
  });
});

describe('allowedHostsOf', () => {
  it('refuses an entry that is no host name, with a port, or written *.example.com', () => {
    expect(() => allowedHostsOf(['hooks.example.com:8443'])).toThrow(/without a port/);
    expect(() => allowedHostsOf(['*.example.com'])).toThrow(/\.example\.com/);
    expect(() => allowedHostsOf(['https://hooks.example.com/'])).toThrow(/not a host name/);
    expect(() => allowedHostsOf([''])).toThrow(/not a host name/);
    expect(() => allowedHostsOf(['.127.0.0.1'])).toThrow(/not a host name/);
  });

  it('takes an IP literal, which changes nothing', () => {
    expect(allowedHostsOf(['127.0.0.1', '::1', '[::1]']).names.size).toBe(0);
  });
});

describe('oncePerHost', () => {
  it('tells each distinct host once, up to its limit, the last one saying so', () => {
    const told: [string, boolean][] = [];
    const tell = oncePerHost((host, last) => told.push([host, last]), 3);
    for (const host of ['a.test', 'A.test:1', 'b.test', 'a.test:2', 'c.test', 'd.test', 'c.test']) tell(host);
    expect(told).toEqual([
      ['a.test', false],
      ['b.test', false],
      ['c.test', true],
    ]);
  });
});

describe('hostHint', () => {
  it('names the flag and the name to allow, without the port', () => {
    expect(hostHint('abc.tunnel.example:443', '--allowed-host', false)).toMatch(
      /"abc\.tunnel\.example:443".*--allowed-host abc\.tunnel\.example$/,
    );
    expect(hostHint('a b', '--allowed-host', true)).toMatch(/"a b".*rebinding \(further hosts refused/);
  });
});
