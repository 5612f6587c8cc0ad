/**
 * Outages: the service on PostgreSQL, its results in PostgreSQL or S3 (s3rver on loopback),
 * takes operations and hand-ins while its blob store is stopped twice and its PostgreSQL
 * connections are cut once (a TCP proxy between, never the shared server). No operation may
 * fail, every callback must be delivered (exactly once, except where the cut fell between a
 * receiver's answer and its recording), no request may be answered 500, `/readyz` must say 503
 * during each outage and 200 after it, and no file may be left that no operation owns.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { FormData, request } from 'undici';
import { createListenServer } from '../../packages/mediahook/src/web/listen-server.ts';
import {
  type BlobStore,
  idGenOfBlobKey,
  PostgresBlobStore,
  S3BlobStore,
} from '../../packages/server/src/delivery/index.ts';
import { sweepResults } from '../../packages/server/src/delivery/result-sweep.ts';
import { createApiServer } from '../../packages/server/src/service/api-http-server.ts';
import { builtInGenerator } from '../../packages/server/src/service/generators/index.ts';
import { createService } from '../../packages/server/src/service/service.ts';
import { ALL_CLIENTS, PostgresStore } from '../../packages/server/src/store/index.ts';
import { S3_BUCKET, S3_CREDENTIALS, startS3Server } from '../../packages/server/test/blobs/s3-server.ts';
import { freshSchema, POSTGRES_URL, sleep, tempDir, until } from './processes.ts';
import { startTcpProxy, throughProxy } from './tcp-proxy.ts';

interface OutageOptions {
  blobs: 'postgres' | 's3';
  operations: number;
  handIns: number;
  /** How long each of the two blob-store outages lasts. */
  outageMs: number;
  /** How long PostgreSQL stays cut off. */
  cutMs: number;
  settleMs: number;
}

interface OutageFigures {
  blobs: 'postgres' | 's3';
  accepted: number;
  /** Answers to the clients' requests, by status (a 503 is tried again by the client). */
  answers: Record<string, number>;
  /** Log events of the service: faults waited out (`operation_deferred`, `callback_deferred`). */
  events: Record<string, number>;
  failed: string[];
  notDelivered: string[];
  /** Ids the receiver got more than once: when first, and how many times. */
  duplicates: { id: string; deliveries: number; firstAt: number }[];
  /** When the PostgreSQL cut began and ended. */
  cut: { from: number; to: number };
  /** Per outage (blob store, PostgreSQL, blob store): `/readyz` said 503 during it, and 200 after. */
  readyz: { outage: string; unready: boolean; readyAfter: boolean }[];
  /** Files kept that no operation owns, and multipart uploads or chunks left behind. */
  orphans: string[];
  leftovers: number;
  /** Files the sweep removed at the end: written, their answer lost, never recorded. */
  swept: number;
  seconds: number;
}

const JPEG = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
  randomBytes(3_000),
  Buffer.from([0xff, 0xd9]),
]);

export async function runOutages(options: OutageOptions): Promise<OutageFigures> {
  const started = Date.now();
  const { schema, drop } = freshSchema('outages');
  const target = new URL(POSTGRES_URL);
  const upstream = { host: target.hostname, port: Number(target.port || 5432) };
  const storeProxy = await startTcpProxy(upstream);
  const blobProxy = options.blobs === 'postgres' ? await startTcpProxy(upstream) : null;
  const s3 = options.blobs === 's3' ? await startS3Server() : null;
  const dir = await tempDir('outages');
  const events: Record<string, number> = {};
  const bump = (map: Record<string, number>, key: string) => (map[key] = (map[key] ?? 0) + 1);
  const store = new PostgresStore({
    connectionString: throughProxy(POSTGRES_URL, storeProxy),
    schema,
    onBackgroundError: () => bump(events, 'store_background_error'),
  });
  const observer = new PostgresStore({ connectionString: POSTGRES_URL, schema });
  let blobs: BlobStore | undefined;
  const deliveries = new Map<string, { count: number; firstAt: number }>();
  const receiver = createListenServer({
    out: `${dir.path}/received`,
    onOutcome(outcome) {
      const id = outcome.callback?.id_gen;
      if (!id || (outcome.verdict !== 'accepted' && outcome.verdict !== 'duplicate')) return;
      const seen = deliveries.get(id) ?? { count: 0, firstAt: Date.now() };
      seen.count++;
      deliveries.set(id, seen);
    },
  });
  receiver.server.listen(0, '127.0.0.1');
  await once(receiver.server, 'listening');
  const hook = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}/hook`;
  const cut = { from: 0, to: 0 };
  try {
    await store.migrate();
    blobs = s3
      ? await S3BlobStore.open(`s3://${S3_BUCKET}/outages`, {
          endpoint: s3.endpoint,
          credentials: S3_CREDENTIALS,
        })
      : await PostgresBlobStore.open({ connectionString: throughProxy(POSTGRES_URL, blobProxy!), schema });
    const service = createService({
      store,
      blobs,
      dataDir: dir.path,
      generator: builtInGenerator(),
      ssrf: { allowPrivate: true },
      retrySchedule: [200, 500, 1_000, 2_000, 5_000],
      log: (level, event) => void bump(events, event),
    });
    await service.start();
    const server = createApiServer(service.handler);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const answers: Record<string, number> = {};
    /** Sends until an answer other than 503 (or a cut connection), as a client should. */
    const untilAnswered = async (send: () => Promise<{ status: number; id: string }>) => {
      for (;;) {
        const answer = await send().catch(() => ({ status: 0, id: '' }));
        bump(answers, String(answer.status));
        if (answer.status !== 503 && answer.status !== 0) return answer;
        // Sooner than Retry-After asks: the run is short.
        await sleep(300);
      }
    };
    const create = () =>
      untilAnswered(async () => {
        const response = await request(`${api}/v1/operations`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            kind: 'image',
            family: 'A',
            prompt: 'a harbour at dusk',
            webhook_url: hook,
          }),
        });
        const body = (await response.body.json()) as { id_gen?: string };
        return { status: response.statusCode, id: body.id_gen ?? '' };
      });
    const handIn = (id: string) =>
      untilAnswered(async () => {
        const form = new FormData();
        form.append('webhook_url', hook);
        form.append('family', 'A');
        form.append('id_gen', id);
        form.append('result', new Blob([JPEG]), 'result.jpg');
        const response = await request(`${api}/v1/callbacks`, { method: 'POST', body: form });
        await response.body.text();
        return { status: response.statusCode, id };
      });

    const readyz: OutageFigures['readyz'] = [];
    const ready = () =>
      request(`${api}/readyz`)
        .then(async (r) => (await r.body.text(), r.statusCode))
        .catch(() => 0);
    /** Runs an outage while watching `/readyz`: a 503 seen during it, a 200 seen after it. */
    const watched = async (outage: string, run: () => Promise<unknown>) => {
      let over = false;
      let unready = false;
      const watching = (async () => {
        while (!over) {
          if ((await ready()) === 503) unready = true;
          await sleep(250);
        }
      })();
      await run();
      over = true;
      await watching;
      const readyAfter = await until(async () => (await ready()) === 200, 15_000, 250);
      readyz.push({ outage, unready, readyAfter });
    };
    const blobOutage = () =>
      watched(`blob store (${options.blobs})`, async () => {
        if (s3) {
          await s3.stop();
          await sleep(options.outageMs);
          await s3.start();
        } else await blobProxy!.cut(options.outageMs);
      });
    const gap = options.outageMs / 2;
    const windowMs = 3 * gap + 2 * options.outageMs + options.cutMs;
    const outages = (async () => {
      await sleep(gap);
      await blobOutage();
      await sleep(gap);
      await watched('PostgreSQL', async () => {
        cut.from = Date.now();
        await Promise.all([storeProxy.cut(options.cutMs), blobProxy?.cut(options.cutMs)]);
        cut.to = Date.now();
      });
      await sleep(gap);
      await blobOutage();
    })();
    const total = options.operations + options.handIns;
    // Hand-ins spread evenly among the operations.
    const handInAt = new Set(
      Array.from({ length: options.handIns }, (_, k) => Math.floor((k * total) / options.handIns)),
    );
    const sent = Array.from({ length: total }, async (_, i) => {
      await sleep((i * windowMs) / total);
      return handInAt.has(i) ? handIn(`handed-in-${i}`) : create();
    });
    const accepted = (await Promise.all(sent))
      .filter((a) => a.status === 202 || a.status === 200)
      .map((a) => a.id);
    await outages;

    const settled = async () => {
      for (const id of accepted) {
        if ((await observer.getOperation(ALL_CLIENTS, id))?.callback.state !== 'delivered') return false;
      }
      return true;
    };
    await until(settled, options.settleMs, 250);
    const failed: string[] = [];
    const notDelivered: string[] = [];
    for (const id of accepted) {
      const operation = await observer.getOperation(ALL_CLIENTS, id);
      if (operation?.state === 'failed') failed.push(id);
      if (operation?.callback.state !== 'delivered') {
        const callback = await observer.getCallback(id);
        const lease = callback?.lease_owner
          ? ` leased until ${new Date(callback.lease_expires_at!).toISOString()}`
          : '';
        notDelivered.push(
          `${id} (${operation?.state}, callback ${operation?.callback.state}${lease}, ${operation?.callback.attempts.length} attempts${operation?.fault ? `, fault ${operation.fault.message}` : ''})`,
        );
      }
    }
    await Promise.all([service.closeServer(server), service.stop()]);
    // A write whose answer the outage lost leaves a file no operation owns: the retention sweep
    // removes it once it is an hour old. Swept as an hour from now would.
    const swept = await sweepResults(observer, blobs, { now: Date.now() + 3_600_000 + 60_000 });
    const orphans: string[] = [];
    for await (const key of blobs.keys()) {
      if ((await observer.getOperationRecord(ALL_CLIENTS, idGenOfBlobKey(key)))?.result?.key !== key)
        orphans.push(key);
    }
    const leftovers = s3 ? await s3.partsStored() : await strayChunks(schema);
    return {
      blobs: options.blobs,
      accepted: accepted.length,
      answers,
      events,
      failed,
      notDelivered,
      duplicates: [...deliveries]
        .filter(([, seen]) => seen.count > 1)
        .map(([id, seen]) => ({ id, deliveries: seen.count, firstAt: seen.firstAt })),
      cut,
      readyz,
      orphans,
      leftovers,
      swept,
      seconds: Math.round((Date.now() - started) / 100) / 10,
    };
  } finally {
    await blobs?.close();
    await store.close();
    await observer.close();
    receiver.server.closeAllConnections();
    await receiver.close();
    await storeProxy.close();
    await blobProxy?.close();
    await s3?.close();
    await drop();
    await dir.remove();
  }
}

/** Chunks of the PostgreSQL blob store that belong to no file (a write that died half way). */
async function strayChunks(schema: string): Promise<number> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${schema}.result_chunks c
       WHERE NOT EXISTS (SELECT 1 FROM ${schema}.result_files f WHERE f.key = c.key)`,
    );
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}

/** What broke a promise of the run; empty when every one held. */
export function outageProblems(figures: OutageFigures, expected: number): string[] {
  const problems: string[] = [];
  if (figures.accepted !== expected)
    problems.push(`${figures.accepted} of ${expected} requests were accepted`);
  if (figures.failed.length > 0) problems.push(`operations failed: ${figures.failed.join(', ')}`);
  if (figures.notDelivered.length > 0)
    problems.push(`callbacks not delivered: ${figures.notDelivered.join(', ')}`);
  const otherErrors = Object.keys(figures.answers).filter(
    (status) => Number(status) >= 500 && status !== '503',
  );
  if (otherErrors.length > 0) problems.push(`answered ${otherErrors.join(', ')}: a fault must be 503`);
  // A repeat is allowed only where the cut may have fallen between the receiver's answer and
  // the attempt's recording: a delivery first received around the cut.
  for (const { id, deliveries, firstAt } of figures.duplicates) {
    if (firstAt < figures.cut.from - 1_000 || firstAt > figures.cut.to + 1_000) {
      problems.push(`${id} was delivered ${deliveries} times, first outside the PostgreSQL cut`);
    }
  }
  for (const { outage, unready, readyAfter } of figures.readyz) {
    if (!unready) problems.push(`/readyz never said 503 while the ${outage} was down`);
    if (!readyAfter) problems.push(`/readyz did not say 200 again after the ${outage} came back`);
  }
  if (figures.orphans.length > 0) problems.push(`files no operation owns: ${figures.orphans.join(', ')}`);
  if (figures.leftovers > 0) problems.push(`${figures.leftovers} upload parts or chunks left behind`);
  if (!figures.events['operation_deferred'] && !figures.events['callback_deferred']) {
    problems.push('no fault was waited out: the outages missed the work');
  }
  return problems;
}
