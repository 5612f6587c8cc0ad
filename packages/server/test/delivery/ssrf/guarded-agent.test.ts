/**
 * The guarded undici Agent with an injected resolver and a recording dialler: refused
 * addresses never reach the dialler, allowed ones reach it as the checked IP address, every new
 * connection of the pool is checked again (DNS rebinding), and a loopback receiver works end to
 * end with allowPrivate. Real connections go to 127.0.0.1 only (see helpers.ts).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createGuardedAgent,
  findSsrfRefusal,
  type GuardedAgentOptions,
  type SsrfPolicy,
  SsrfRefusedError,
} from '../../../src/delivery/ssrf/index.ts';
import {
  LOOPBACK,
  type LoopbackServer,
  NotDialledError,
  recordingDialer,
  scriptedResolver,
  startLoopbackServer,
} from './helpers.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function agentFor(policy: SsrfPolicy, options: Parameters<typeof createGuardedAgent>[1]) {
  const agent = createGuardedAgent(policy, options);
  closers.push(() => agent.destroy());
  return agent;
}

async function server(options: { closeEach?: boolean } = {}): Promise<LoopbackServer> {
  const started = await startLoopbackServer(options);
  closers.push(() => started.close());
  return started;
}

async function get(url: string, agent: ReturnType<typeof createGuardedAgent>): Promise<string> {
  const response = await request(url, { dispatcher: agent });
  return response.body.text();
}

describe('the guarded Agent refuses before dialling', () => {
  it.each([
    ['evil.example', ['10.0.0.5'], 'refused by the SSRF guard: 10.0.0.5 is private'],
    ['split.example', ['93.184.216.34', '127.0.0.1'], 'refused by the SSRF guard: 127.0.0.1 is loopback'],
    ['imds.example', ['169.254.169.254'], 'refused by the SSRF guard: 169.254.169.254 is metadata'],
    [
      'v6.example',
      ['2606:4700::1111', 'fd00:ec2::254'],
      'refused by the SSRF guard: fd00:ec2::254 is metadata',
    ],
    // The AAAA answer decides as much as the A answer, whichever comes first.
    [
      'aaaa.example',
      ['93.184.216.34', '64:ff9b::a9fe:a9fe'],
      'refused by the SSRF guard: 64:ff9b::a9fe:a9fe is metadata',
    ],
    [
      'stack.example',
      ['fe80::a9fe:a9fe%eth0'],
      'refused by the SSRF guard: fe80::a9fe:a9fe%eth0 is metadata',
    ],
  ])('%s → %j is refused and never dialled', async (hostname, addresses, message) => {
    const { resolver, asked } = scriptedResolver({ [hostname]: addresses });
    const dialer = recordingDialer();
    const agent = agentFor({}, { resolver, connect: dialer.connect });
    const error = await get(`http://${hostname}/hook`, agent).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SsrfRefusedError);
    expect((error as Error).message).toContain(message);
    expect(asked).toEqual([hostname]);
    expect(dialer.dialled).toEqual([]);
  });

  it.each([
    'http://10.0.0.5/',
    'http://127.0.0.1:1/',
    'http://[::1]:1/',
    'http://[::ffff:7f00:1]:1/',
    'http://169.254.169.254/',
    'https://[fd00:ec2::254]/',
  ])('refuses the IP literal %s without resolving or dialling', async (url) => {
    const { resolver, asked } = scriptedResolver({});
    const dialer = recordingDialer();
    const agent = agentFor({}, { resolver, connect: dialer.connect });
    await expect(get(url, agent)).rejects.toBeInstanceOf(SsrfRefusedError);
    expect(asked).toEqual([]);
    expect(dialer.dialled).toEqual([]);
  });

  it('lets the delivery engine find the refusal inside fetch’s "fetch failed"', async () => {
    const { resolver } = scriptedResolver({ 'evil.example': ['10.0.0.5'] });
    const dialer = recordingDialer();
    const agent = agentFor({}, { resolver, connect: dialer.connect });
    const error = await fetch('http://evil.example/', { dispatcher: agent }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect(findSsrfRefusal(error)?.message).toMatch(/^refused by the SSRF guard: 10\.0\.0\.5 is private/);
    expect(dialer.dialled).toEqual([]);
  });
});

describe('the guarded Agent dials the checked address', () => {
  it('hands the dialler the IP address, keeping host and TLS server name', async () => {
    const { resolver } = scriptedResolver({ 'hooks.example.com': ['93.184.216.34'] });
    const dialer = recordingDialer();
    const agent = agentFor({}, { resolver, connect: dialer.connect });
    await expect(get('https://hooks.example.com:8443/cb', agent)).rejects.toBeInstanceOf(NotDialledError);
    expect(dialer.dialled).toEqual([
      {
        hostname: '93.184.216.34',
        host: 'hooks.example.com:8443',
        port: '8443',
        protocol: 'https:',
        servername: 'hooks.example.com',
      },
    ]);
  });

  it('dials public IP literals as they are, with no server name', async () => {
    const dialer = recordingDialer();
    const agent = agentFor({}, { resolver: scriptedResolver({}).resolver, connect: dialer.connect });
    await expect(get('https://[2606:4700::1111]/', agent)).rejects.toBeInstanceOf(NotDialledError);
    expect(dialer.dialled).toMatchObject([{ hostname: '2606:4700::1111' }]);
    expect(dialer.dialled[0]?.servername).toBeFalsy();
  });

  it('tries the next checked address when one does not answer', async () => {
    const receiver = await server();
    const { resolver } = scriptedResolver({ 'dual.example': ['2606:4700::1111', '93.184.216.34'] });
    const dialer = recordingDialer({
      loopbackPort: receiver.port,
      failFirst: { count: 1, code: 'ENETUNREACH' },
    });
    const agent = agentFor({}, { resolver, connect: dialer.connect });
    expect(await get('http://dual.example/x', agent)).toBe('ok /x');
    expect(dialer.dialled.map((target) => target.hostname)).toEqual(['2606:4700::1111', '93.184.216.34']);
  });
});

describe('a dialler that throws', () => {
  it('fails the request instead of leaving it hanging', async () => {
    const { resolver } = scriptedResolver({ 'hooks.example.com': ['93.184.216.34'] });
    const throwing = () => {
      throw new Error('dialler exploded');
    };
    const agent = agentFor({}, { resolver, connect: throwing });
    await expect(get('http://hooks.example.com/', agent)).rejects.toThrow('dialler exploded');
  });
});

describe('every connection is checked on the address it dials', () => {
  it('DNS rebinding: public on the first connection, 127.0.0.1 on the second → the second is refused', async () => {
    const receiver = await server({ closeEach: true });
    const { resolver, asked } = scriptedResolver({ 'rebind.example': [['93.184.216.34'], [LOOPBACK]] });
    const dialer = recordingDialer({ loopbackPort: receiver.port });
    const agent = agentFor({}, { resolver, connect: dialer.connect });

    expect(await get('http://rebind.example/first', agent)).toBe('ok /first');
    const second = await get('http://rebind.example/second', agent).catch((caught: unknown) => caught);

    expect(second).toBeInstanceOf(SsrfRefusedError);
    expect((second as Error).message).toContain('127.0.0.1 is loopback');
    expect(asked).toEqual(['rebind.example', 'rebind.example']);
    expect(dialer.dialled.map((target) => target.hostname)).toEqual(['93.184.216.34']);
    expect(receiver.requests).toEqual(['/first']);
  });

  it('a kept-alive connection is reused without a new lookup; a new one is looked up and checked again', async () => {
    const receiver = await server();
    const { resolver, asked } = scriptedResolver({ 'pooled.example': ['93.184.216.34'] });
    const dialer = recordingDialer({ loopbackPort: receiver.port });
    const agent = agentFor({}, { resolver, connect: dialer.connect, agent: { connections: 1 } });

    expect(await get('http://pooled.example/1', agent)).toBe('ok /1');
    expect(await get('http://pooled.example/2', agent)).toBe('ok /2');
    expect(asked).toHaveLength(1);
    expect(receiver.connections).toHaveLength(1);

    await request('http://pooled.example/3', { dispatcher: agent, reset: true }).then((response) =>
      response.body.text(),
    );
    expect(await get('http://pooled.example/4', agent)).toBe('ok /4');
    expect(asked).toHaveLength(2);
    expect(dialer.dialled).toHaveLength(2);
  });
});

describe('a loopback receiver, end to end through the real dialler', () => {
  it('works with allowPrivate, by IP literal and by a name resolving to 127.0.0.1', async () => {
    const receiver = await server();
    const { resolver } = scriptedResolver({ 'receiver.test': [LOOPBACK] });
    const agent = agentFor({ allowPrivate: true }, { resolver });
    expect(await get(`http://${LOOPBACK}:${receiver.port}/literal`, agent)).toBe('ok /literal');
    expect(await get(`http://receiver.test:${receiver.port}/named`, agent)).toBe('ok /named');
    expect(receiver.requests).toEqual(['/literal', '/named']);
  });

  it('works with an allow-list entry for the loopback address only', async () => {
    const receiver = await server();
    const agent = agentFor({ allow: [LOOPBACK] }, { resolver: scriptedResolver({}).resolver });
    expect(await get(`http://${LOOPBACK}:${receiver.port}/x`, agent)).toBe('ok /x');
  });

  it('is refused without them, and the server sees no connection', async () => {
    const receiver = await server();
    const agent = agentFor({}, { resolver: scriptedResolver({}).resolver });
    await expect(get(`http://${LOOPBACK}:${receiver.port}/`, agent)).rejects.toBeInstanceOf(SsrfRefusedError);
    expect(receiver.connections).toEqual([]);
  });
});

describe('what could move the dial elsewhere', () => {
  it('a redirect that fetch follows is a new connection, checked like the first', async () => {
    const redirecting = createServer((request, response) => {
      request.resume();
      response.writeHead(302, { location: 'http://evil.example/next' }).end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, LOOPBACK, resolve));
    closers.push(() => new Promise<void>((resolve) => redirecting.close(() => resolve())));
    const { port } = redirecting.address() as AddressInfo;
    const { resolver, asked } = scriptedResolver({ 'evil.example': ['10.0.0.5'] });
    const dialer = recordingDialer({ loopbackPort: port });
    const agent = agentFor({ allow: [LOOPBACK] }, { resolver, connect: dialer.connect });

    const error = await fetch(`http://${LOOPBACK}:${port}/first`, { dispatcher: agent }).catch(
      (caught: unknown) => caught,
    );
    expect(findSsrfRefusal(error)?.message).toContain('10.0.0.5 is private');
    expect(asked).toEqual(['evil.example']);
    expect(dialer.dialled.map((target) => target.hostname)).toEqual([LOOPBACK]);
  });

  it('proxy variables of the environment are not honoured: the checked address is dialled', async () => {
    const names = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'NO_PROXY', 'no_proxy'];
    const saved = names.map((name) => [name, process.env[name]] as const);
    closers.push(async () => {
      for (const [name, value] of saved) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });
    for (const name of names.slice(0, 4)) process.env[name] = `http://${LOOPBACK}:9`;
    for (const name of names.slice(4)) delete process.env[name];
    const { resolver } = scriptedResolver({
      'hooks.example.com': ['93.184.216.34'],
      'evil.example': ['10.0.0.5'],
    });
    const dialer = recordingDialer();
    const agent = agentFor({}, { resolver, connect: dialer.connect });

    await expect(get('http://hooks.example.com/', agent)).rejects.toBeInstanceOf(NotDialledError);
    await expect(get('https://evil.example/', agent)).rejects.toBeInstanceOf(SsrfRefusedError);
    expect(dialer.dialled).toMatchObject([{ hostname: '93.184.216.34', host: 'hooks.example.com' }]);
  });
});

describe('createGuardedAgent configuration', () => {
  it('rejects a bad allow-list entry and options that would bypass the guard', () => {
    expect(() => createGuardedAgent({ allow: ['10.0.0.1/8'] })).toThrow(TypeError);
    expect(() => createGuardedAgent({}, { connect: { socketPath: '/tmp/x.sock' } })).toThrow(TypeError);
    // Not allowed by the types either; the check is for callers that cast or build options at run time.
    const withSocket = { socketPath: '/tmp/x.sock' } as unknown as NonNullable<GuardedAgentOptions['agent']>;
    expect(() => createGuardedAgent({}, { agent: withSocket })).toThrow(TypeError);
  });
});
