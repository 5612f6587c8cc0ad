/**
 * Clients, on SQLite and PostgreSQL: each client's key sees and acts on its own operations only,
 * its callbacks are signed with its own secret (rotated with an overlap), keys are managed by
 * admin keys, and `Idempotency-Key` makes creating an operation safe to retry.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { FormData, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignatureVerifier } from '../../../mediahook/src/protocol/index.ts';
import { createApiKey } from '../../src/service/clients/api-keys.ts';
import { ALL_CLIENTS } from '../../src/store/index.ts';
import { freshSchema } from '../../../../test/support/processes.ts';
import { POSTGRES_URL, probePostgres } from '../store/backends.ts';
import { listen, type RunningService, SECRET, startService, waitForCallback } from './service-harness.ts';

const problem = await probePostgres();
const METADATA = 'http://169.254.169.254/hook';

/** A receiver that keeps every request's headers and bytes and answers 200. */
async function capturingReceiver() {
  const requests: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.end('ok');
    });
  });
  const url = await listen(server);
  return {
    url,
    /** The request that carried callback `id`. */
    async callbackOf(id: string) {
      for (let i = 0; i < 600; i++) {
        const found = requests.find((r) => r.headers['webhook-id'] === id);
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`no callback ${id} arrived`);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Whether mediahook's verifier accepts the request with `secret`. */
function verifies(callback: { headers: IncomingHttpHeaders; body: Buffer }, secret: string): boolean {
  try {
    const verifier = new SignatureVerifier([secret], (name) => callback.headers[name] as string | undefined);
    verifier.update(callback.body);
    verifier.verify();
    return true;
  } catch {
    return false;
  }
}

const backends = [
  { name: 'sqlite', skip: false },
  { name: 'postgres', skip: problem !== undefined && process.env.CI !== 'true' },
] as const;

describe.each(backends)('clients on $name', ({ name, skip }) => {
  let run: RunningService;
  let receiver: Awaited<ReturnType<typeof capturingReceiver>>;
  let dropSchema: (() => Promise<void>) | undefined;
  const auth: Record<'admin' | 'a' | 'b', Record<string, string>> = { admin: {}, a: {}, b: {} };
  const op = (webhook_url: string) => ({ kind: 'image', family: 'A', prompt: 'p', webhook_url });

  beforeAll(async () => {
    if (skip) return;
    let db: string | undefined;
    if (name === 'postgres') {
      const schema = freshSchema('clients_test');
      db = `${POSTGRES_URL}?schema=${schema.schema}`;
      dropSchema = schema.drop;
    }
    run = await startService({
      ...(db === undefined ? {} : { db }),
      secretOverlapMs: 1_000,
      secretKey: randomBytes(32).toString('base64'),
    });
    receiver = await capturingReceiver();
    const { created } = await createApiKey(run.store, { client: 'default', role: 'admin' });
    auth.admin = { authorization: `Bearer ${created.key}` };
    for (const client of ['a', 'b'] as const) {
      const made = await run.post('/v1/keys', { client }, auth.admin);
      expect([made.status, made.body.client, made.body.role]).toEqual([201, client, 'client']);
      auth[client] = { authorization: `Bearer ${made.body.key}` };
    }
  });
  afterAll(async () => {
    await run?.stop();
    await receiver?.close();
    await dropSchema?.();
  });

  it.skipIf(skip)('keeps each client to its own operations, hand-ins, receivers and stats', async () => {
    const created = await run.post('/v1/operations', op(`${receiver.url}/a`), auth.a);
    expect([created.status, created.body.client]).toEqual([202, 'a']);
    const id = created.body.id_gen as string;
    await waitForCallback(run, id, ['delivered']);
    // A callback to the metadata address is refused unsent and ends dead: something to recover.
    const dead = (await run.post('/v1/operations', op(METADATA), auth.a)).body.id_gen as string;
    await waitForCallback(run, dead, ['dead']);

    expect((await run.get(`/v1/operations/${id}`, auth.a)).status).toBe(200);
    for (const [method, path] of [
      ['GET', `/v1/operations/${id}`],
      ['GET', `/v1/operations/${id}/result`],
      ['POST', `/v1/operations/${id}/redeliver`],
    ] as const) {
      const answer = await run.call(method, path, undefined, auth.b);
      expect([answer.status, answer.body?.error?.code], path).toEqual([404, 'not_found']);
    }
    expect((await run.get('/v1/operations', auth.b)).body.operations).toEqual([]);
    expect((await run.get('/v1/endpoints', auth.b)).body.endpoints).toEqual([]);
    expect((await run.get('/v1/endpoints/169.254.169.254:80', auth.b)).status).toBe(404);
    expect((await run.get('/v1/endpoints/169.254.169.254:80', auth.a)).status).toBe(200);
    const stats = (await run.get('/v1/stats', auth.b)).body.buckets as {
      delivered: number;
      failed: number;
    }[];
    expect(stats.every((b) => b.delivered === 0 && b.failed === 0)).toBe(true);
    const since = { since: '2020-01-01T00:00:00Z' };
    expect((await run.post('/v1/endpoints/169.254.169.254:80/recover', since, auth.b)).body).toEqual({
      requeued: 0,
    });
    expect((await run.store.getOperation(ALL_CLIENTS, dead))?.callback.state).toBe('dead');

    const form = new FormData();
    form.set('webhook_url', `${receiver.url}/b`);
    form.set('family', 'A');
    form.set('id_gen', id);
    form.set('message', 'taken');
    const handIn = await request(`${run.url}/v1/callbacks`, { method: 'POST', body: form, headers: auth.b });
    const handInBody = (await handIn.body.json()) as Record<string, unknown>;
    expect([handIn.statusCode, Object.keys(handInBody)]).toEqual([409, ['error']]);

    // A sees its own; an admin sees everyone's, with the client named.
    expect(
      (await run.get('/v1/endpoints', auth.a)).body.endpoints.map((e: { key: string }) => e.key),
    ).toContain('169.254.169.254:80');
    const all = (await run.get('/v1/operations', auth.admin)).body.operations as {
      id_gen: string;
      client: string;
    }[];
    expect(all.find((o) => o.id_gen === id)?.client).toBe('a');
    expect((await run.post('/v1/endpoints/169.254.169.254:80/recover', since, auth.a)).body).toEqual({
      requeued: 1,
    });
  });

  it.skipIf(skip)(
    "signs a client's callbacks with its own secret, and rotates it with an overlap",
    async () => {
      const secretA = (await run.get('/v1/webhooks/secret', auth.a)).body.secret as string;
      const secretB = (await run.get('/v1/webhooks/secret', auth.b)).body.secret as string;
      expect(secretA).toMatch(/^whsec_/);
      expect(secretB).not.toBe(secretA);
      // Sealed at rest with the service's secret key: the store alone does not hand it out.
      const kept = (await run.store.getClientSecret('a'))!.secret;
      expect([kept.startsWith('sealed:v1:'), kept.includes(secretA.slice(6))]).toEqual([true, false]);
      const first = (await run.post('/v1/operations', op(`${receiver.url}/a`), auth.a)).body.id_gen as string;
      const callback = await receiver.callbackOf(first);
      expect([verifies(callback, secretA), verifies(callback, secretB), verifies(callback, SECRET)]).toEqual([
        true,
        false,
        false,
      ]);

      const rotated = await run.post('/v1/webhooks/secret/rotate', undefined, auth.a);
      expect(rotated.status).toBe(200);
      const secretA2 = rotated.body.secret as string;
      expect(secretA2).not.toBe(secretA);
      expect((await run.get('/v1/webhooks/secret', auth.a)).body.secret).toBe(secretA2);
      const during = (await run.post('/v1/operations', op(`${receiver.url}/a`), auth.a)).body
        .id_gen as string;
      const duringCallback = await receiver.callbackOf(during);
      expect([verifies(duringCallback, secretA), verifies(duringCallback, secretA2)]).toEqual([true, true]);
      expect(String(duringCallback.headers['webhook-signature']).split(' ')).toHaveLength(2);

      // The overlap here is 1 s: after it, only the new secret signs.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const after = (await run.post('/v1/operations', op(`${receiver.url}/a`), auth.a)).body.id_gen as string;
      const afterCallback = await receiver.callbackOf(after);
      expect([verifies(afterCallback, secretA), verifies(afterCallback, secretA2)]).toEqual([false, true]);

      const rotateDefault = await run.post('/v1/webhooks/secret/rotate', undefined, auth.admin);
      expect([rotateDefault.status, rotateDefault.body.error.code]).toEqual([409, 'conflict']);
      expect((await run.get('/v1/webhooks/secret', auth.admin)).body).toEqual({ secret: SECRET });
    },
  );

  it.skipIf(skip)('answers one Idempotency-Key once, however many ask at once', async () => {
    const headers = { ...auth.a, 'idempotency-key': `create-${name}-${randomBytes(4).toString('hex')}` };
    const body = op(`${METADATA}/idem`);
    const before = (await run.store.listOperations('a', { limit: 500 })).length;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => run.post('/v1/operations', body, headers)),
    );
    expect((await run.store.listOperations('a', { limit: 500 })).length).toBe(before + 1);
    const created = answers.filter((a) => a.status === 202 && a.headers['idempotent-replayed'] === undefined);
    expect(created).toHaveLength(1);
    const id = created[0]!.body.id_gen as string;
    for (const answer of answers) {
      if (answer.status === 202) expect(answer.body.id_gen).toBe(id);
      else expect([answer.status, answer.body.error.code]).toEqual([409, 'idempotency_key_in_use']);
    }
    // The same JSON value, spelt otherwise, is the same request.
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(body).reverse()));
    const again = await run.call('POST', '/v1/operations', reordered, {
      ...headers,
      'content-type': 'application/json',
    });
    expect([again.status, again.body, again.headers['idempotent-replayed']]).toEqual([
      202,
      created[0]!.body,
      'true',
    ]);
    const other = await run.post('/v1/operations', { ...body, prompt: 'other' }, headers);
    expect([other.status, other.body.error.code]).toEqual([422, 'idempotency_key_reused']);
    // Scoped to the client: B's same key is B's own.
    expect(
      (await run.post('/v1/operations', body, { ...auth.b, 'idempotency-key': headers['idempotency-key'] }))
        .status,
    ).toBe(202);
    const bad = await run.post('/v1/operations', body, { ...auth.a, 'idempotency-key': 'é' });
    expect([bad.status, bad.body.error.code]).toEqual([400, 'invalid_request']);
  });

  it.skipIf(skip)('lets admin keys alone manage keys, and refuses revoked and expired keys', async () => {
    const listed = await run.get('/v1/keys', auth.a);
    expect([listed.status, listed.body.error.code]).toEqual([403, 'forbidden']);
    expect((await run.post('/v1/keys', { client: 'c' }, auth.a)).status).toBe(403);
    const made = await run.post('/v1/keys', { client: 'c', role: 'admin', expires_in: '30d' }, auth.admin);
    expect(Object.keys(made.body).sort()).toEqual(['client', 'expires_at', 'key', 'key_id', 'role']);
    const keys = (await run.get('/v1/keys', auth.admin)).body.keys as Record<string, unknown>[];
    expect(keys.map((k) => k.key_id)).toContain(made.body.key_id);
    expect(JSON.stringify(keys)).not.toContain(made.body.key);
    const bearer = { authorization: `Bearer ${made.body.key}` };
    expect((await run.get('/v1/keys', bearer)).status).toBe(200);
    expect((await run.call('DELETE', `/v1/keys/${made.body.key_id}`, undefined, auth.admin)).status).toBe(
      204,
    );
    expect((await run.call('DELETE', '/v1/keys/key_nothing', undefined, auth.admin)).status).toBe(404);
    expect((await run.get('/v1/keys', bearer)).status).toBe(401);

    const expired = 'mh_expired-key-for-the-test';
    const { apiKeyHash } = await import('../../src/service/clients/api-keys.ts');
    await run.store.addApiKey({
      hash: apiKeyHash(expired),
      prefix: expired.slice(0, 7),
      client: 'a',
      role: 'client',
      expires_at: Date.now() - 1,
    });
    expect((await run.get('/v1/operations', { authorization: `Bearer ${expired}` })).status).toBe(401);
  });
});

describe('keyless mode', () => {
  it('opens every /v1 route but /v1/keys, as client default', async () => {
    const run = await startService({ workers: false });
    try {
      expect(
        (
          await run.post('/v1/operations', {
            kind: 'image',
            family: 'A',
            prompt: 'p',
            webhook_url: 'http://127.0.0.1:9/x',
          })
        ).body.client,
      ).toBe('default');
      expect((await run.get('/v1/webhooks/secret')).body).toEqual({ secret: SECRET });
      expect((await run.get('/v1/keys')).status).toBe(403);
      expect((await run.post('/v1/keys', { client: 'x' })).status).toBe(403);
    } finally {
      await run.stop();
    }
  });
});
