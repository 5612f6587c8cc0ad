/**
 * Secrets from the environment or a file: one source each, several secrets space-separated,
 * and every refusal says what is wrong without showing the secret.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defaultSecretsOf, secretKeyOf, storeLocationOf } from '../../src/cli/secret-sources.ts';

const ONE = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const TWO = 'whsec_c2Vjb25kLXNlY3JldC1mb3ItdGVzdHM=';

describe('secrets off the command line', () => {
  let dir: string;
  const saved = { ...process.env };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mediahook-secrets-'));
  });
  afterEach(() => {
    for (const name of ['MEDIAHOOK_SECRET', 'MEDIAHOOK_SECRET_KEY', 'MEDIAHOOK_DB']) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads client default’s secrets from a file or MEDIAHOOK_SECRET, several space-separated', async () => {
    const file = join(dir, 'secret');
    await writeFile(file, `${ONE}\n${TWO}\n`, { mode: 0o600 });
    expect(defaultSecretsOf({ 'secret-file': file })).toEqual([ONE, TWO]);
    process.env['MEDIAHOOK_SECRET'] = `${TWO} ${ONE}`;
    expect(defaultSecretsOf({})).toEqual([TWO, ONE]);
    // A flag or the file wins over the environment; both flags at once are refused.
    expect(defaultSecretsOf({ secret: [ONE] })).toEqual([ONE]);
    expect(() => defaultSecretsOf({ secret: [ONE], 'secret-file': file })).toThrow(/not both/);
    delete process.env['MEDIAHOOK_SECRET'];
    expect(defaultSecretsOf({})).toEqual([]);
  });

  it('refuses a bad secret or an unreadable file without showing what it read', async () => {
    process.env['MEDIAHOOK_SECRET'] = 'whsec_short-but-secret';
    const error = (() => {
      try {
        defaultSecretsOf({});
      } catch (caught) {
        return caught as Error;
      }
      return undefined;
    })();
    expect(error?.message).toMatch(/^MEDIAHOOK_SECRET: /);
    expect(error?.message).not.toContain('short-but-secret');
    expect(() => defaultSecretsOf({ 'secret-file': join(dir, 'missing') })).toThrow(/cannot read .*ENOENT/);
  });

  it('takes the secret key from the environment, and only a long one', () => {
    process.env['MEDIAHOOK_SECRET_KEY'] = 'x'.repeat(40);
    expect(secretKeyOf({})).toBe('x'.repeat(40));
    expect(() => secretKeyOf({ 'secret-key': 'short' })).toThrow(/at least 32 characters/);
    expect(() => secretKeyOf({ 'secret-key': 'x'.repeat(40), 'secret-key-file': '/x' })).toThrow(/not both/);
  });

  it('opens the store MEDIAHOOK_DB names unless --db does', () => {
    process.env['MEDIAHOOK_DB'] = '/elsewhere/store.sqlite';
    expect(storeLocationOf(undefined, '/data')).toBe('/elsewhere/store.sqlite');
    expect(storeLocationOf('/flag.sqlite', '/data')).toBe('/flag.sqlite');
    delete process.env['MEDIAHOOK_DB'];
    expect(storeLocationOf(undefined, '/data')).toBe('/data/mediahook.sqlite');
  });
});
