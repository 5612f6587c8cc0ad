/**
 * The operator's view over HTTP, on SQLite and PostgreSQL: `GET /v1/endpoints`, `GET /v1/stats`
 * and `POST /v1/endpoints/{key}/recover` against a real receiver that fails, then recovers; their
 * answers valid against /openapi.json, and their errors with stable codes.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/service/openapi-document.ts';
import { POSTGRES_URL, probePostgres } from '../store/backends.ts';
import { listen, type RunningService, startService, waitForCallback } from './service-harness.ts';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => unknown;

const postgres = (await probePostgres()) === undefined;
if (!postgres) console.warn(`operator API: SKIPPING PostgreSQL (${POSTGRES_URL})`);
const databases = postgres ? ['sqlite', 'postgres'] : ['sqlite'];

/** Checks an answer against a schema of /openapi.json. */
function validator(name: string): (body: unknown) => void {
  const document = openApiDocument() as { components: { schemas: Record<string, object> } };
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi', components: document.components });
  const validate = ajv.compile({ $ref: `openapi#/components/schemas/${name}` });
  return (body) => expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
}

/** A receiver that answers 500 with a JSON error while `failing`, and 200 once it is not. */
async function switchableReceiver(): Promise<{ url: string; key: string; failing: boolean; server: Server }> {
  const receiver = { url: '', key: '', failing: true, server: createServer() };
  receiver.server.on('request', (req, res) => {
    req.resume();
    req.on('end', () => {
      if (!receiver.failing) return void res.writeHead(200).end('ok');
      res.writeHead(500, { 'content-type': 'application/json', 'x-receiver': 'down' });
      res.end('{"error":{"code":"storage_down","message":"disk full"}}');
    });
  });
  const base = await listen(receiver.server);
  receiver.url = `${base}/hook`;
  receiver.key = new URL(base).host;
  return receiver;
}

describe.each(databases)('the operator’s view over HTTP on %s', (database) => {
  let run: RunningService;
  let schema: string | undefined;
  let flaky: Awaited<ReturnType<typeof switchableReceiver>>;
  let healthy: Awaited<ReturnType<typeof switchableReceiver>>;
  let deadId: string;
  let deliveredId: string;
  let startedAt: number;

  const create = async (url: string) => {
    const created = await run.post('/v1/operations', {
      kind: 'image',
      family: 'A',
      prompt: 'operator',
      fail_with: 'made to fail',
      webhook_url: url,
    });
    expect(created.status).toBe(202);
    return created.body.id_gen as string;
  };

  beforeAll(async () => {
    flaky = await switchableReceiver();
    healthy = await switchableReceiver();
    healthy.failing = false;
    if (database === 'postgres') schema = `operator_api_${process.pid}_${randomBytes(3).toString('hex')}`;
    run = await startService(schema ? { db: `${POSTGRES_URL}?schema=${schema}` } : {});
    startedAt = Date.now();
    deliveredId = await create(healthy.url);
    deadId = await create(flaky.url);
    await waitForCallback(run, deliveredId, ['delivered']);
    // The schedule of the harness: four attempts in all, then dead.
    await waitForCallback(run, deadId, ['dead']);
  }, 60_000);

  afterAll(async () => {
    await run?.stop();
    flaky?.server.close();
    healthy?.server.close();
    if (schema) {
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    }
  });

  it('lists the receivers worst first, with counts, rate, latency and the last error', async () => {
    const answer = await run.get('/v1/endpoints');
    expect(answer.status).toBe(200);
    validator('EndpointHealthList')(answer.body);
    const [worst, best] = answer.body.endpoints;
    expect(answer.body.endpoints).toHaveLength(2);
    expect(worst).toMatchObject({
      key: flaky.key,
      callbacks: { pending: 0, retrying: 0, delivering: 0, delivered: 0, dead: 1, gone: 0 },
      last_error: 'HTTP 500',
      success_rate_1h: 0,
    });
    expect(['open', 'half_open', 'closed']).toContain(worst.circuit_state);
    expect(best).toMatchObject({
      key: healthy.key,
      circuit_state: 'closed',
      callbacks: { delivered: 1, dead: 0 },
      last_error: null,
      success_rate_1h: 1,
    });
    for (const receiver of [worst, best]) {
      expect(Date.parse(receiver.last_attempt_at)).toBeGreaterThanOrEqual(startedAt - 1000);
      expect(receiver.latency_ms.p50).toBeLessThanOrEqual(receiver.latency_ms.p95);
    }
  });

  it('counts the attempts in the buckets of the hour and of the day', async () => {
    const validate = validator('Stats');
    for (const [window, length, width] of [
      ['1h', 60, 60_000],
      ['24h', 96, 900_000],
    ] as const) {
      const answer = await run.get(`/v1/stats?window=${window}`);
      expect(answer.status).toBe(200);
      validate(answer.body);
      const buckets = answer.body.buckets as { start: string; delivered: number; failed: number }[];
      expect(buckets).toHaveLength(length);
      const starts = buckets.map((b) => Date.parse(b.start));
      expect(starts.every((s, i) => i === 0 || s - starts[i - 1]! === width)).toBe(true);
      expect(starts.at(-1)! % width).toBe(0);
      expect(starts.at(-1)!).toBeLessThanOrEqual(Date.now());
      expect(buckets.reduce((n, b) => n + b.delivered, 0)).toBe(1);
      expect(buckets.reduce((n, b) => n + b.failed, 0)).toBe(4);
    }
    expect((await run.get('/v1/stats')).body.buckets).toHaveLength(60);
  });

  it('refuses an unknown window and a window given twice', async () => {
    for (const query of ['window=2h', 'window=1h&window=24h', 'window=']) {
      const answer = await run.get(`/v1/stats?${query}`);
      expect([answer.status, answer.body.error.code], query).toEqual([400, 'invalid_request']);
    }
  });

  it('refuses a bad since with a stable code, and takes a later one for nothing', async () => {
    const path = `/v1/endpoints/${encodeURIComponent(flaky.key)}/recover`;
    for (const since of ['yesterday', '2026-01-01', '2026-01-01T10:00:00', '2026-13-01T10:00:00Z', 12]) {
      const answer = await run.post(path, { since });
      const code = typeof since === 'string' ? 'invalid_since' : 'invalid_request';
      expect([answer.status, answer.body.error.code], String(since)).toEqual([400, code]);
    }
    for (const body of [{}, { since: '2026-01-01T10:00:00Z', more: 1 }, []]) {
      const answer = await run.post(path, body);
      expect([answer.status, answer.body.error.code], JSON.stringify(body)).toEqual([400, 'invalid_request']);
    }
    expect((await run.post(path, '{"since":')).body.error.code).toBe('invalid_json');
    const later = await run.post(path, { since: new Date(Date.now() + 60_000).toISOString() });
    expect([later.status, later.body]).toEqual([202, { requeued: 0 }]);
    expect((await run.store.getCallback(deadId))!.state).toBe('dead');
  });

  it('answers 405 and 404 where the routes do not go', async () => {
    const recover = `/v1/endpoints/${encodeURIComponent(flaky.key)}/recover`;
    const wrong = await run.get(recover);
    expect([wrong.status, wrong.body.error.code, wrong.headers['allow']]).toEqual([
      405,
      'method_not_allowed',
      'POST',
    ]);
    expect((await run.post('/v1/endpoints', {})).status).toBe(405);
    expect((await run.post('/v1/stats', {})).status).toBe(405);
    const bad = await run.post('/v1/endpoints/%E0%A4%A/recover', { since: '2026-01-01T10:00:00Z' });
    expect([bad.status, bad.body.error.code]).toEqual([404, 'not_found']);
  });

  it('recovers the receiver’s dead callbacks once it is back, and nothing delivered', async () => {
    flaky.failing = false;
    const answer = await run.post(`/v1/endpoints/${encodeURIComponent(flaky.key)}/recover`, {
      since: new Date(startedAt - 60_000).toISOString(),
    });
    expect(answer.status).toBe(202);
    validator('Recovered')(answer.body);
    expect(answer.body).toEqual({ requeued: 1 });
    const delivered = await waitForCallback(run, deadId, ['delivered']);
    expect(delivered.callback.attempts).toHaveLength(5);
    const healthyAgain = await run.post(`/v1/endpoints/${encodeURIComponent(healthy.key)}/recover`, {
      since: new Date(0).toISOString(),
    });
    expect(healthyAgain.body).toEqual({ requeued: 0 });
    const [attempt] = delivered.callback.attempts;
    expect(attempt!.response_headers).toMatchObject({ 'x-receiver': 'down' });
    expect(attempt!.request_headers).toMatchObject({ 'webhook-id': deadId });
    expect(attempt!.request_headers!['user-agent']).toMatch(/^mediahook\//);
  });
});
