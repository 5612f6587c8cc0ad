/**
 * `@mediahook/server/client` against the real service over loopback: every route it calls, an
 * idempotency key seen by the server, hand-ins from a Blob and from streams, the result read
 * back as a stream, errors with their status and code; 64 MiB handed in with flat memory; and
 * the same calls from Bun and Deno.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createClient, MediahookApiError } from '../../src/client/index.ts';
import { createApiServer } from '../../src/service/api-http-server.ts';
import { type RuntimeName, runtimeEnvironment, runtimeForTest } from '../../../../test/runtimes/tools.ts';
import { addAdminKey, listen, type RunningService, startService } from '../service/service-harness.ts';

const RUN = fileURLToPath(new URL('fixtures/client-run.ts', import.meta.url));
const HOOK = 'http://127.0.0.1:9/hook';
const MiB = 1024 * 1024;

function jpeg(size: number): Uint8Array {
  const bytes = new Uint8Array(size).fill(7);
  bytes.set([0xff, 0xd8, 0xff, 0xe0]);
  bytes.set([0xff, 0xd9], size - 2);
  return bytes;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Runs `args` to its end and parses the one JSON line it prints. */
async function runProcess(binary: string, args: string[], env: NodeJS.ProcessEnv): Promise<any> {
  const child: ChildProcess = spawn(binary, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  onTestFinished(() => void child.kill());
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

describe('the typed client', () => {
  let run: RunningService;
  let front: Server;
  let url: string;
  const seen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    run = await startService({ workers: false });
    // The service's own handler, behind a server that notes what each request carried.
    front = createApiServer((req, res) => {
      seen.push(req.headers);
      run.service.handler(req, res);
    });
    url = await listen(front);
  });
  afterAll(async () => {
    front?.closeAllConnections();
    front?.close();
    await run?.stop();
  });

  it('creates, gets and lists operations; the idempotency key reaches the server', async () => {
    const client = createClient({ baseUrl: `${url}/` });
    const body = { kind: 'image', family: 'A', prompt: 'a lighthouse', webhook_url: HOOK } as const;
    const created = await client.operations.create(body, { idempotencyKey: 'order-1234' });
    expect(created).toMatchObject({ kind: 'image', family: 'A', state: 'queued', webhook_url: HOOK });
    expect(seen.at(-1)!['idempotency-key']).toBe('order-1234');
    await client.operations.create({ ...body, prompt: 'another' });
    expect(seen.at(-1)).not.toHaveProperty('idempotency-key');
    expect(await client.operations.get(created.id_gen)).toEqual(created);
    const page = await client.operations.list({ family: 'A', state: 'queued', limit: 1 });
    expect(page.operations).toHaveLength(1);
    expect(page.next_before).toBe(page.operations[0]!.id_gen);
    const next = await client.operations.list({ family: 'A', limit: 1, before: page.next_before! });
    expect(next.operations.map((operation) => operation.id_gen)).toEqual([created.id_gen]);
  });

  it('hands in from a Blob, a Web stream and a Node stream, and streams the result back', async () => {
    const client = createClient({ baseUrl: url });
    const bytes = jpeg(2 * MiB + 3);
    const size = bytes.length;
    const sources = {
      blob: new Blob([bytes], { type: 'image/jpeg' }),
      web: { stream: new Blob([bytes]).stream(), size, name: 'a "quoted"\r\nname.jpg' },
      node: { stream: Readable.from([bytes.subarray(0, MiB), bytes.subarray(MiB)]), size },
    };
    for (const [name, file] of Object.entries(sources)) {
      const id = `client-${name}`;
      const operation = await client.callbacks.submit({ webhook_url: HOOK, family: 'A', id_gen: id, file });
      expect(operation).toMatchObject({ id_gen: id, kind: 'external', state: 'succeeded' });
      const result = await client.operations.result(id);
      expect(result.headers.get('content-type')).toBe('image/jpeg');
      expect(sha256(new Uint8Array(await result.arrayBuffer()))).toBe(sha256(bytes));
    }
    const short = { stream: Readable.from([bytes.subarray(0, 100)]), size };
    const cut = await client.callbacks
      .submit({ webhook_url: HOOK, family: 'A', id_gen: 'client-short', file: short })
      .catch((error: Error) => error);
    // fetch rejects with its own TypeError, the stream's error as its cause.
    expect(String((cut as Error).cause ?? cut)).toMatch(/ended after 100 of/);
    await expect(client.operations.get('client-short')).rejects.toMatchObject({ status: 404 });
    const failed = await client.callbacks.submit({
      webhook_url: HOOK,
      family: 'B',
      id_gen: 'client-error',
      status: 'refused',
      time_gen: '2026-11-28T10:00:00.000Z',
      message: 'prompt refused',
    });
    expect(failed).toMatchObject({ state: 'failed', error_message: 'prompt refused' });
    const redelivered = await client.operations.redeliver('client-error');
    expect(redelivered.callback.state).toBe('pending');
  });

  it("reads the operator's view: receivers, a circuit, recovery and stats", async () => {
    const client = createClient({ baseUrl: url });
    expect((await client.endpoints.list()).endpoints.map((endpoint) => endpoint.key)).toContain(
      '127.0.0.1:9',
    );
    expect(await client.endpoints.get('127.0.0.1:9')).toMatchObject({
      key: '127.0.0.1:9',
      circuit_state: 'closed',
    });
    expect(await client.endpoints.recover('127.0.0.1:9', new Date(0))).toEqual({ requeued: 0 });
    expect((await client.stats('1h')).buckets).toHaveLength(60);
    expect((await client.stats()).buckets).toHaveLength(60);
    expect((await client.stats('24h')).buckets).toHaveLength(96);
  });

  it('throws MediahookApiError with the status and code of every answer other than 2xx', async () => {
    const client = createClient({ baseUrl: url });
    const caught = (call: Promise<unknown>) =>
      call.then(
        () => null,
        (error: unknown) => error,
      );
    const missing = await caught(client.operations.get('no-such-operation'));
    expect(missing).toBeInstanceOf(MediahookApiError);
    expect(missing).toMatchObject({
      status: 404,
      code: 'not_found',
      message: 'no operation no-such-operation',
    });
    await expect(
      caught(client.operations.create({ kind: 'video', family: 'B', prompt: 'p', webhook_url: HOOK })),
    ).resolves.toMatchObject({ status: 400, code: 'family_b_video' });
    await expect(caught(client.endpoints.recover('a:1', 'yesterday'))).resolves.toMatchObject({
      status: 400,
      code: 'invalid_since',
    });
    await expect(caught(client.operations.result('client-error'))).resolves.toMatchObject({
      status: 404,
      code: 'not_found',
    });
    const proxied = createClient({
      baseUrl: url,
      fetch: async () => new Response('<h1>Bad Gateway</h1>', { status: 502 }),
    });
    await expect(caught(proxied.stats())).resolves.toMatchObject({ status: 502, code: 'unexpected_answer' });
  });

  it('sends its key as a Bearer token', async () => {
    const key = 'mh_client-test-key-0123456789';
    await addAdminKey(run.store, key);
    const refused = await createClient({ baseUrl: url })
      .stats()
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 401, code: 'unauthorized' });
    const wrong = await createClient({ baseUrl: url, key: 'mh_wrong' })
      .stats()
      .catch((error: unknown) => error);
    expect(wrong).toMatchObject({ status: 401, code: 'unauthorized' });
    expect((await createClient({ baseUrl: url, key }).stats()).buckets).toHaveLength(60);
  });
});

describe('the typed client in a process of its own', () => {
  let run: RunningService;
  let dir: string;
  beforeAll(async () => {
    run = await startService({ workers: false });
    dir = await mkdtemp(join(tmpdir(), 'mediahook-client-'));
  });
  afterAll(async () => {
    await run?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each(['stream', 'blob'])(
    'hands in 64 MiB from a file as a %s with flat memory',
    { timeout: 120_000 },
    async (as) => {
      const size = 64 * MiB;
      const file = join(dir, `large-${as}.jpg`);
      const hash = createHash('sha256');
      async function* chunks() {
        for (let i = 0; i < size / MiB; i++) {
          const piece = new Uint8Array(MiB).fill(i % 251);
          if (i === 0) piece.set([0xff, 0xd8, 0xff, 0xe0]);
          if (i === size / MiB - 1) piece.set([0xff, 0xd9], MiB - 2);
          hash.update(piece);
          yield piece;
        }
      }
      await pipeline(Readable.from(chunks()), createWriteStream(file));
      const report = await runProcess(
        process.execPath,
        ['--expose-gc', '--import', 'tsx', RUN, 'large', run.url, file, String(size), as],
        process.env,
      );
      expect(report).toMatchObject({ state: 'succeeded', sha256: hash.digest('hex') });
      // Buffered, the file alone would add 64 MiB: streamed, it adds a few buffers.
      expect(report.peak - report.before).toBeLessThan(32 * MiB);
    },
  );

  it.for<RuntimeName>(['bun', 'deno'])(
    'calls every route from %s',
    { timeout: 10 * 60_000 },
    async (name, context) => {
      const binary = await runtimeForTest(name, context);
      const args =
        name === 'bun' ? ['--no-install', RUN] : ['run', '--allow-net=127.0.0.1', '--allow-read', RUN];
      const report = await runProcess(binary, [...args, 'api', run.url, HOOK], runtimeEnvironment(name));
      expect(report).toEqual({
        created: { id_gen: expect.any(String), state: 'queued' },
        got: true,
        listed: true,
        handedIn: { state: 'succeeded', kind: 'external' },
        result: true,
        failed: { state: 'failed', error_message: 'out of credits' },
        redelivered: 'pending',
        endpoints: true,
        endpoint: 'closed',
        recovered: 0,
        stats: 96,
        notFound: { status: 404, code: 'not_found' },
        invalid: { status: 400, code: 'family_b_video' },
      });
    },
  );
});
