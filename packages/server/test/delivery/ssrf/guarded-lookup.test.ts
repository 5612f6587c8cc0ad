/**
 * The guarded resolution and the `lookup` built on it, with an injected resolver. The only
 * real connections are to a server on 127.0.0.1; every other address is only resolved,
 * checked and refused or returned, never dialled.
 */
import type { LookupAddress } from 'node:dns';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createGuardedLookup,
  resolveAllowedAddresses,
  type SsrfPolicy,
  SsrfRefusedError,
  systemResolver,
} from '../../../src/delivery/ssrf/index.ts';
import { type LoopbackServer, scriptedResolver, startLoopbackServer } from './helpers.ts';

interface LookupOutcome {
  error: unknown;
  address?: string | LookupAddress[];
  family?: number | undefined;
}

function lookupOnce(
  lookup: ReturnType<typeof createGuardedLookup>,
  hostname: string,
  options: { all?: boolean; family?: number } = {},
): Promise<LookupOutcome> {
  return new Promise((resolve) => {
    lookup(hostname, options, (error, address, family) => resolve({ error, address, family }));
  });
}

const TABLE = {
  'evil.example': ['10.0.0.5'],
  'split.example': ['93.184.216.34', '127.0.0.1'],
  'public.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'metadata.example': ['169.254.169.254'],
  'hooks.test': ['127.0.0.1'],
  'empty.example': [],
  'garbage.example': ['not-an-address'],
};

describe('resolveAllowedAddresses', () => {
  it('returns every address of a name that resolves to public addresses only', async () => {
    const { resolver } = scriptedResolver(TABLE);
    await expect(resolveAllowedAddresses({}, 'public.example', { resolver })).resolves.toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
    ]);
  });

  it.each([
    ['evil.example', '10.0.0.5', 'private'],
    ['split.example', '127.0.0.1', 'loopback'],
    ['mapped.example', '::ffff:7f00:1', 'loopback'],
    ['metadata.example', '169.254.169.254', 'metadata'],
  ])('refuses %s as a whole: %s is %s', async (hostname, address, category) => {
    const { resolver } = scriptedResolver(TABLE);
    const refusal = await resolveAllowedAddresses({}, hostname, { resolver }).catch(
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(SsrfRefusedError);
    expect(refusal).toMatchObject({ code: 'address_refused', address, category, hostname });
    expect((refusal as Error).message).toContain(`${address} is ${category}`);
    expect((refusal as Error).message).toContain(`resolved from ${hostname}`);
  });

  it('checks IP literals as they are, without resolving them, in every spelling', async () => {
    const { resolver, asked } = scriptedResolver(TABLE);
    for (const host of ['10.0.0.5', '0177.0.0.1', '2130706433', '[::1]', 'fe80::1%eth0', '::ffff:7f00:1']) {
      await expect(resolveAllowedAddresses({}, host, { resolver })).rejects.toBeInstanceOf(SsrfRefusedError);
    }
    await expect(resolveAllowedAddresses({ allowPrivate: true }, '0x7f.1', { resolver })).resolves.toEqual([
      { address: '127.0.0.1', family: 4 },
    ]);
    expect(asked).toEqual([]);
  });

  it('opens private answers with allowPrivate or an allow-listed name', async () => {
    const { resolver } = scriptedResolver(TABLE);
    await expect(
      resolveAllowedAddresses({ allowPrivate: true }, 'evil.example', { resolver }),
    ).resolves.toEqual([{ address: '10.0.0.5', family: 4 }]);
    await expect(
      resolveAllowedAddresses({ allow: ['evil.example'] }, 'evil.example', { resolver }),
    ).resolves.toHaveLength(1);
    await expect(
      resolveAllowedAddresses({ allowPrivate: true }, 'metadata.example', { resolver }),
    ).rejects.toThrow(/169\.254\.169\.254 is metadata/);
  });

  it('keeps an IPv6 metadata answer refused with allowPrivate, and reads mapped entries as IPv4', async () => {
    const { resolver } = scriptedResolver({ 'stack.example': ['fe80::a9fe:a9fe%eth0'], ...TABLE });
    await expect(
      resolveAllowedAddresses({ allowPrivate: true }, 'stack.example', { resolver }),
    ).rejects.toThrow(/fe80::a9fe:a9fe%eth0 is metadata/);
    await expect(
      resolveAllowedAddresses({ allow: ['::ffff:10.0.0.0/104'] }, 'evil.example', { resolver }),
    ).resolves.toEqual([{ address: '10.0.0.5', family: 4 }]);
  });

  it('refuses an answer that is not an IP address', async () => {
    const { resolver } = scriptedResolver(TABLE);
    await expect(resolveAllowedAddresses({}, 'garbage.example', { resolver })).rejects.toMatchObject({
      code: 'address_invalid',
    });
  });

  it('fails like DNS on an empty answer, and on a resolver that takes too long', async () => {
    const { resolver } = scriptedResolver(TABLE);
    await expect(resolveAllowedAddresses({}, 'empty.example', { resolver })).rejects.toMatchObject({
      code: 'ENOTFOUND',
    });
    const never = () => new Promise<never>(() => {});
    await expect(
      resolveAllowedAddresses({}, 'slow.example', { resolver: never, timeout: 20 }),
    ).rejects.toMatchObject({
      code: 'ETIMEOUT',
    });
  });
});

describe('systemResolver', () => {
  it('is dns.promises.lookup with all: true (shown on a literal, which needs no DNS)', async () => {
    await expect(systemResolver('127.0.0.1', { family: 0 })).resolves.toEqual([
      { address: '127.0.0.1', family: 4 },
    ]);
  });
});

describe('createGuardedLookup', () => {
  it('answers all: true callers with every address and others with the first', async () => {
    const { resolver } = scriptedResolver(TABLE);
    const lookup = createGuardedLookup({}, { resolver });
    expect(await lookupOnce(lookup, 'public.example', { all: true })).toEqual({
      error: null,
      address: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
      ],
      family: undefined,
    });
    expect(await lookupOnce(lookup, 'public.example')).toEqual({
      error: null,
      address: '93.184.216.34',
      family: 4,
    });
  });

  it('passes the refusal to the callback, with all: true or not', async () => {
    const { resolver } = scriptedResolver(TABLE);
    const lookup = createGuardedLookup({}, { resolver });
    for (const all of [true, false]) {
      const outcome = await lookupOnce(lookup, 'split.example', { all });
      expect(outcome.error).toBeInstanceOf(SsrfRefusedError);
      expect(outcome.address).toBeUndefined();
    }
  });

  it('accepts the dns.lookup call shapes (hostname, family, callback) and (hostname, callback)', async () => {
    const { resolver } = scriptedResolver(TABLE);
    const lookup = createGuardedLookup({}, { resolver }) as unknown as (...args: unknown[]) => void;
    const byFamily = await new Promise((resolve) =>
      lookup('public.example', 4, (...args: unknown[]) => resolve(args)),
    );
    expect(byFamily).toEqual([null, '93.184.216.34', 4]);
    const bare = await new Promise((resolve) =>
      lookup('evil.example', (...args: unknown[]) => resolve(args)),
    );
    expect((bare as unknown[])[0]).toBeInstanceOf(SsrfRefusedError);
  });
});

describe('createGuardedLookup as the lookup of net.connect (loopback only)', () => {
  let server: LoopbackServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  function dial(policy: SsrfPolicy, port: number): Promise<{ connected: boolean; error?: unknown }> {
    const { resolver } = scriptedResolver(TABLE);
    return new Promise((resolve) => {
      const socket = connect({ host: 'hooks.test', port, lookup: createGuardedLookup(policy, { resolver }) });
      socket.once('connect', () => {
        socket.destroy();
        resolve({ connected: true });
      });
      socket.once('error', (error) => resolve({ connected: false, error }));
    });
  }

  it('refuses a name resolving to 127.0.0.1 without allowPrivate: no connection reaches the server', async () => {
    server = await startLoopbackServer();
    const outcome = await dial({}, server.port);
    expect(outcome.connected).toBe(false);
    expect(outcome.error).toBeInstanceOf(SsrfRefusedError);
    expect(server.connections).toEqual([]);
  });

  it('connects to it with allowPrivate', async () => {
    server = await startLoopbackServer();
    expect(await dial({ allowPrivate: true }, server.port)).toEqual({ connected: true });
  });
});
