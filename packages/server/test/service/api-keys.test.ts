/**
 * API keys: created by `mediahook keys create`, stored only hashed; once one exists, /v1 asks
 * for it; without one, `serve` refuses to bind beyond loopback.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../src/service/clients/api-keys.ts';
import { openStore } from '../../src/store/index.ts';
import { runCli } from '../../../mediahook/test/cli/helpers.ts';
import { addAdminKey, type RunningService, startServeProcess, startService } from './service-harness.ts';

describe('API keys', () => {
  let data: string;
  beforeAll(async () => {
    data = await mkdtemp(join(tmpdir(), 'mediahook-keys-'));
  });
  afterAll(async () => {
    await rm(data, { recursive: true, force: true });
  });

  it('`keys create` prints a key once and stores only its hash', async () => {
    const result = await runCli(['keys', 'create', '--client', 'acme', '--data', data, '--label', 'ci']);
    expect(result.code).toBe(0);
    const key = result.stdout.trim();
    expect(key).toMatch(/^mh_[A-Za-z0-9_-]{43}$/);
    const store = openStore(join(data, 'mediahook.sqlite'));
    try {
      await store.migrate();
      expect(await store.countApiKeys()).toBe(1);
      expect(await store.findApiKey(apiKeyHash(key))).toMatchObject({
        label: 'ci',
        prefix: key.slice(0, 7),
        client: 'acme',
        role: 'client',
      });
      expect(await store.findApiKey(key)).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('`keys create --json`, `keys list --json` and `keys revoke` manage keys by KEY_ID', async () => {
    const created = await runCli([
      'keys',
      'create',
      '--client',
      'ops',
      '--admin',
      '--expires',
      '30d',
      '--json',
      '--data',
      data,
    ]);
    expect(created.code).toBe(0);
    const made = JSON.parse(created.stdout) as Record<string, string>;
    expect(Object.keys(made).sort()).toEqual(['client', 'expires_at', 'key', 'key_id', 'role']);
    expect([made.client, made.role]).toEqual(['ops', 'admin']);
    expect(Date.parse(made.expires_at!) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const listed = await runCli(['keys', 'list', '--json', '--data', data]);
    const { keys } = JSON.parse(listed.stdout) as { keys: Record<string, unknown>[] };
    expect(keys.find((k) => k.key_id === made.key_id)).toMatchObject({
      client: 'ops',
      role: 'admin',
      revoked_at: null,
    });
    expect(listed.stdout).not.toContain(made.key);
    expect((await runCli(['keys', 'revoke', made.key_id!, '--data', data])).code).toBe(0);
    const after = JSON.parse(
      (await runCli(['keys', 'list', '--json', '--data', data])).stdout,
    ) as typeof listed & {
      keys: Record<string, unknown>[];
    };
    expect(after.keys.find((k) => k.key_id === made.key_id)?.revoked_at).toEqual(expect.any(String));
    const unknown = await runCli(['keys', 'revoke', 'key_0000', '--data', data]);
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringMatching(/no key key_0000/)]);
    const usage = await runCli(['keys', 'create', '--data', data]);
    expect([usage.code, usage.stderr]).toEqual([2, expect.stringMatching(/--client NAME is required/)]);
  });

  it('`serve` refuses a non-loopback address while no key exists', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'mediahook-nokeys-'));
    try {
      const result = await runCli(['serve', '--data', empty, '--host', '0.0.0.0', '--port', '0']);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/without an API key/);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  describe('with a key in the store', () => {
    let run: RunningService;
    const key = 'mh_test-key-0123456789';
    beforeAll(async () => {
      run = await startService({ workers: false });
      await addAdminKey(run.store, key);
    });
    afterAll(async () => {
      await run?.stop();
    });

    it('asks /v1 for the key and leaves health, metrics and OpenAPI open', async () => {
      const body = { kind: 'image', family: 'A', prompt: 'p', webhook_url: 'http://127.0.0.1:9/x' };
      const anonymous = await run.post('/v1/operations', body);
      expect([anonymous.status, anonymous.body.error.code]).toEqual([401, 'unauthorized']);
      // RFC 6750 §3: a 401 says which scheme it wants, and whether the token given was bad.
      expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="mediahook"');
      const wrong = await run.post('/v1/operations', body, { authorization: 'Bearer mh_wrong' });
      expect(wrong.status).toBe(401);
      expect(wrong.headers['www-authenticate']).toBe('Bearer realm="mediahook", error="invalid_token"');
      const head = await run.call('HEAD', '/v1/operations');
      expect([head.status, head.headers['www-authenticate'], head.text]).toEqual([
        401,
        'Bearer realm="mediahook"',
        '',
      ]);
      const allowed = await run.post('/v1/operations', body, { authorization: `Bearer ${key}` });
      expect(allowed.status).toBe(202);
      expect((await run.get(`/v1/operations/${allowed.body.id_gen}`)).status).toBe(401);
      expect(
        (await run.get(`/v1/operations/${allowed.body.id_gen}`, { authorization: `Bearer ${key}` })).status,
      ).toBe(200);
      for (const path of ['/healthz', '/metrics', '/openapi.json'])
        expect((await run.get(path)).status).toBe(200);
    });

    it('asks the operator’s view for the key too', async () => {
      const recover = '/v1/endpoints/127.0.0.1:9/recover';
      const since = { since: '2026-01-01T00:00:00Z' };
      for (const [method, path] of [
        ['GET', '/v1/endpoints'],
        ['GET', '/v1/endpoints/127.0.0.1:9'],
        ['GET', '/v1/stats?window=24h'],
        ['POST', recover],
      ] as const) {
        const anonymous = await run.call(method, path, method === 'POST' ? since : undefined);
        expect([anonymous.status, anonymous.body.error.code], path).toEqual([401, 'unauthorized']);
        const keyed = await run.call(method, path, method === 'POST' ? since : undefined, {
          authorization: `Bearer ${key}`,
        });
        expect(keyed.status, path).toBe(method === 'POST' ? 202 : 200);
      }
    });
  });

  it('`serve` starts, answers /healthz and stops on SIGTERM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mediahook-serve-'));
    const serve = await startServeProcess(['--data', dir]);
    try {
      const health = await fetch(new URL('/healthz', serve.url));
      expect(await health.json()).toEqual({ ok: true });
      serve.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
    } finally {
      serve.child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});
