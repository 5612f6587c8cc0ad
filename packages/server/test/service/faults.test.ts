/**
 * Faults are not failures: with the blob store (a real S3 server on loopback) stopped, an
 * operation waits, shows its fault and is delivered once after; a callback whose result cannot
 * be read is given back unsent, with no attempt counted; only a fault outlasting
 * `faultRetryForMs`, or the generator's verdict, fails an operation. The API answers 503 with
 * Retry-After while what a request needs is down, and keeps nothing half-stored. A client's
 * signing secret that the database cannot give now holds its callback up the same way.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FormData, request } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CallbackSender, DeliveryWorker, S3BlobStore } from '../../src/delivery/index.ts';
import { GenerationWorker } from '../../src/service/generation-worker.ts';
import { builtInGenerator, commandGenerator, type Generator } from '../../src/service/generators/index.ts';
import { ClientSecrets } from '../../src/service/clients/client-secrets.ts';
import { ALL_CLIENTS, type OperationResource, PostgresStore, type Store } from '../../src/store/index.ts';
import { freshSchema, until } from '../../../../test/support/processes.ts';
import { startTcpProxy, throughProxy } from '../../../../test/support/tcp-proxy.ts';
import { S3_BUCKET, S3_CREDENTIALS, type S3Server, startS3Server } from '../blobs/s3-server.ts';
import {
  type Backend,
  type BackendKind,
  POSTGRES_URL,
  postgresBackend,
  probePostgres,
  sqliteBackend,
} from '../store/backends.ts';
import { SECRET, startService, startTempReceiving, type TempReceiving } from './service-harness.ts';

process.env['AWS_EC2_METADATA_DISABLED'] = 'true';

const problem = await probePostgres();
if (problem && process.env.CI === 'true') throw new Error(`PostgreSQL is required when CI=true: ${problem}`);
const backends: BackendKind[] = problem ? [sqliteBackend] : [sqliteBackend, postgresBackend];

const JPEG = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
  randomBytes(2_000),
  Buffer.from([0xff, 0xd9]),
]);

let s3: S3Server;
let receiving: TempReceiving;

beforeAll(async () => {
  s3 = await startS3Server();
  receiving = await startTempReceiving(SECRET);
});
afterAll(async () => {
  await receiving?.close();
  await s3?.close();
});

const openS3 = () =>
  S3BlobStore.open(`s3://${S3_BUCKET}/faults-${randomBytes(6).toString('hex')}`, {
    endpoint: s3.endpoint,
    credentials: S3_CREDENTIALS,
  });
const accepted = (id: string) =>
  receiving.outcomes.filter((o) => o.verdict === 'accepted' && o.callback?.id_gen === id).length;

describe.each(backends)('faults with the store on $name', (kind) => {
  let backend: Backend;
  let store: Store;
  let blobs: S3BlobStore;
  let work: string;
  const stops: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    backend = await kind.create();
    store = backend.open();
    await store.migrate();
    blobs = await openS3();
    work = await mkdtemp(join(tmpdir(), 'mediahook-faults-'));
  });
  afterEach(async () => {
    await s3.start();
    for (const stop of stops.splice(0).reverse()) await stop();
    await blobs.close();
    await backend.dispose();
    await rm(work, { recursive: true, force: true });
  });

  const generating = async (options: { generator?: Generator; faultRetryForMs?: number } = {}) => {
    const worker = new GenerationWorker({
      store,
      blobs,
      generator: options.generator ?? builtInGenerator(),
      workDir: work,
      faultRetryForMs: options.faultRetryForMs,
    });
    await worker.start();
    stops.push(() => worker.stop());
    return worker;
  };
  const delivering = async () => {
    const sender = new CallbackSender({ ssrf: { allowPrivate: true }, secrets: [SECRET] });
    const worker = new DeliveryWorker({ store, blobs, sender });
    await worker.start();
    stops.push(async () => {
      await worker.stop();
      await sender.close();
    });
  };
  const create = async (fail_with: string | null = null) => {
    const id = randomUUID();
    await store.createOperation({
      id_gen: id,
      client: 'default',
      kind: 'image',
      family: 'A',
      webhook_url: `${receiving.url}/hook`,
      prompt: 'a lighthouse',
      fail_with,
    });
    return id;
  };
  const waitFor = async (id: string, check: (op: OperationResource) => boolean) => {
    let last: OperationResource | undefined;
    const ok = await until(
      async () => {
        last = await store.getOperation(ALL_CLIENTS, id);
        return last !== undefined && check(last);
      },
      20_000,
      50,
    );
    if (!ok) throw new Error(`operation ${id} never got there: ${JSON.stringify(last)}`);
    return last!;
  };

  it('keeps an operation running through a blob-store outage, shows the fault, delivers it once after', async () => {
    await s3.stop();
    await generating();
    await delivering();
    const id = await create();
    const held = await waitFor(id, (op) => op.fault !== null);
    expect(held.state).toBe('running');
    expect(held.fault!.message).toMatch(/blob store/);
    expect(Date.parse(held.fault!.next_try_at!)).toBeGreaterThan(Date.parse(held.fault!.since));
    await s3.start();
    const done = await waitFor(id, (op) => op.callback.state === 'delivered');
    expect(done.state).toBe('succeeded');
    expect(done.fault).toBeNull();
    expect(done.callback.attempts).toHaveLength(1);
    expect(accepted(id)).toBe(1);
  });

  it('gives back a callback whose result cannot be read, unsent and uncounted, until it can', async () => {
    const generation = await generating();
    const id = await create();
    await waitFor(id, (op) => op.state === 'succeeded');
    await generation.stop();
    await s3.stop();
    await delivering();
    const held = await waitFor(id, (op) => op.fault !== null);
    expect(held.callback.state).toBe('retrying');
    expect(held.callback.attempts).toEqual([]);
    expect(held.fault!.message).toMatch(/result file cannot be read/);
    expect((await store.getCallback(id))!.round_attempt_count).toBe(0);
    await s3.start();
    const done = await waitFor(id, (op) => op.callback.state === 'delivered');
    expect(done.fault).toBeNull();
    expect(done.callback.attempts).toHaveLength(1);
    expect(accepted(id)).toBe(1);
  });

  it('fails an operation only once its fault outlasts the retry window, saying the service was unavailable', async () => {
    await s3.stop();
    await generating({ faultRetryForMs: 1_500 });
    const id = await create();
    const failed = await waitFor(id, (op) => op.state === 'failed');
    expect(failed.error_message).toMatch(/^the service was unavailable: the result could not be kept/);
    expect(failed.fault).toBeNull();
  });

  it("fails on the generator's verdict, and waits out a generator program that cannot start", async () => {
    const missing = join(work, 'no-such-generator');
    await generating({
      generator: {
        generate: (request, options) =>
          (request.fail_with === null ? commandGenerator([missing]) : builtInGenerator()).generate(
            request,
            options,
          ),
      },
    });
    const verdict = await create('the prompt is refused');
    const unstartable = await create();
    expect((await waitFor(verdict, (op) => op.state === 'failed')).error_message).toBe(
      'the prompt is refused',
    );
    const held = await waitFor(unstartable, (op) => op.fault !== null);
    expect(held.state).toBe('running');
    expect(held.fault!.message).toMatch(/could not be started/);
  });
});

describe('the API while the blob store is down', () => {
  let blobs: S3BlobStore;
  let run: Awaited<ReturnType<typeof startService>>;

  beforeAll(async () => {
    blobs = await openS3();
    run = await startService({ blobs, workers: false });
  });
  afterAll(async () => {
    await s3.start();
    await run?.stop();
    await blobs?.close();
  });

  it('answers a hand-in 503 unavailable with Retry-After, and keeps nothing of it', async () => {
    await s3.stop();
    const body = new FormData();
    body.append('webhook_url', `${receiving.url}/hook`);
    body.append('family', 'A');
    body.append('id_gen', 'handed-in-during-outage');
    body.append('result', new Blob([JPEG]), 'frame.jpg');
    const answer = await request(`${run.url}/v1/callbacks`, { method: 'POST', body });
    const json = (await answer.body.json()) as { error: { code: string } };
    expect(answer.statusCode).toBe(503);
    expect(answer.headers['retry-after']).toMatch(/^\d+$/);
    expect(json.error.code).toBe('unavailable');
    // The store is up: creating an operation needs no blob store.
    const created = await run.post('/v1/operations', {
      kind: 'image',
      family: 'A',
      webhook_url: `${receiving.url}/hook`,
      prompt: 'x',
    });
    expect(created.status).toBe(202);
    await s3.start();
    expect((await run.get('/v1/operations/handed-in-during-outage')).status).toBe(404);
    const keys: string[] = [];
    for await (const key of blobs.keys()) keys.push(key);
    expect(keys).toEqual([]);
  });
});

describe.skipIf(problem !== undefined)("a client's signing secret that cannot be read now", () => {
  const schema = freshSchema('faults_signing');
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
  let store: PostgresStore;
  let secretStore: PostgresStore;
  let blobs: S3BlobStore;
  let acme: TempReceiving;
  let worker: DeliveryWorker;
  let sender: CallbackSender;

  beforeAll(async () => {
    const postgres = new URL(POSTGRES_URL);
    proxy = await startTcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) });
    store = new PostgresStore({ connectionString: POSTGRES_URL, schema: schema.schema });
    await store.migrate();
    // The secrets are read over a connection of their own, through a proxy that can be cut.
    secretStore = new PostgresStore({
      connectionString: throughProxy(POSTGRES_URL, proxy),
      schema: schema.schema,
    });
    blobs = await openS3();
  });
  afterAll(async () => {
    proxy?.up();
    await worker?.stop();
    await sender?.close();
    await acme?.close();
    await blobs?.close();
    await secretStore?.close();
    await store?.close();
    await proxy?.close();
    await schema.drop();
  });

  it('gives the callback back unsent and uncounted, then signs it with the secret once read', async () => {
    const secrets = new ClientSecrets({ store: secretStore, cacheMs: 0 });
    acme = await startTempReceiving(await secrets.secretOf('acme'));
    const id = randomUUID();
    await store.submitOperation({
      id_gen: id,
      client: 'acme',
      family: 'A',
      webhook_url: `${acme.url}/hook`,
      status_text: null,
      time_gen: null,
      finished_at: Date.now(),
      submission_sha256: '0'.repeat(64),
      outcome: { state: 'failed', message: 'no picture today' },
    });
    proxy.down();
    sender = new CallbackSender({ ssrf: { allowPrivate: true } });
    worker = new DeliveryWorker({ store, blobs, sender, signingSecrets: (c) => secrets.signingSecrets(c) });
    await worker.start();
    const operation = () => store.getOperation(ALL_CLIENTS, id);
    expect(await until(async () => Boolean((await operation())?.fault), 20_000, 50)).toBe(true);
    const held = (await operation())!;
    expect(held.callback.state).toBe('retrying');
    expect(held.callback.attempts).toEqual([]);
    expect(held.fault!.message).toMatch(/signing secret cannot be read now/);
    expect((await store.getCallback(id))!.round_attempt_count).toBe(0);
    proxy.up();
    expect(await until(async () => (await operation())?.callback.state === 'delivered', 20_000, 50)).toBe(
      true,
    );
    const done = (await operation())!;
    expect(done.fault).toBeNull();
    expect(done.callback.attempts).toHaveLength(1);
    expect(acme.outcomes.filter((o) => o.verdict === 'accepted' && o.callback?.id_gen === id)).toHaveLength(
      1,
    );
  });
});
