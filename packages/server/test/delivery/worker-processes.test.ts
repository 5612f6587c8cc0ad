/**
 * Workers as separate processes (fixtures/worker-process.ts) against one store and one
 * recording receiver in this process: a worker SIGKILLed mid-delivery and a restart deliver
 * everything, and two workers sharing one queue never send the same callback at the same time.
 * Delivery is at-least-once: a crash may cause duplicates, which are counted and each explained.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PostgresStore, SqliteStore } from '../../src/store/index.ts';
import { POSTGRES_URL } from '../store/backends.ts';
import { DeliveryFixture, deliveryBackends, waitFor, waitForStates } from './harness.ts';
import { type RecordingReceiver, startRecordingReceiver } from './receivers.ts';

const WORKER = fileURLToPath(new URL('fixtures/worker-process.ts', import.meta.url));
const backends = await deliveryBackends('delivery worker processes');

interface WorkerProcess {
  child: ChildProcessWithoutNullStreams;
  /** Resolves once the worker delivers (after `go`). */
  go(): Promise<void>;
  stderr(): string;
}

describe.each(backends)('delivery worker processes on $name', (kind) => {
  let f: DeliveryFixture;
  let receiver: RecordingReceiver;
  const children: ChildProcessWithoutNullStreams[] = [];

  beforeEach(async () => {
    f = await DeliveryFixture.create(kind);
    // Every answer takes a while, so that deliveries are in flight when a worker dies.
    receiver = await startRecordingReceiver({ script: () => ({ status: 200, body: 'ok', delayMs: 100 }) });
    f.defer(() => receiver.close());
  });
  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
    }
    await f.dispose();
  });

  /** Spawns a worker on this test's store and waits until it has opened it. */
  async function spawnWorker(
    workerId: string,
    options: { leaseMs: number; concurrency: number; recover?: boolean; renewLeases?: boolean },
  ): Promise<WorkerProcess> {
    const store = f.store;
    const db = store instanceof SqliteStore ? store.path : POSTGRES_URL;
    const schema = store instanceof PostgresStore ? store.schema : undefined;
    const config = { db, schema, workerId, blobs: f.blobs.location, perEndpointLimit: 16, ...options };
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(config)]);
    children.push(child);
    let output = '';
    let errors = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      errors += chunk;
    });
    const says = (line: string) =>
      waitFor(`worker ${workerId} to say ${line}`, () => {
        if (child.exitCode !== null)
          throw new Error(`worker ${workerId} exited ${child.exitCode}: ${errors}`);
        return output.split('\n').includes(line);
      });
    await says('ready');
    return {
      child,
      async go() {
        child.stdin.write('go\n');
        await says('started');
      },
      stderr: () => errors,
    };
  }

  it('delivers everything after a worker is SIGKILLed mid-delivery and another starts', async () => {
    const ids = await f.finishedMany(30, receiver.url);
    const concurrency = 4;
    // Leases short enough to lapse soon on PostgreSQL; on SQLite the restart recovers them at once.
    const leaseMs = 1_500;
    const first = await spawnWorker('first', { leaseMs, concurrency });
    await first.go();
    await waitFor('deliveries under way', () => receiver.requests.length >= 10, 15_000);
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    const sentByFirst = new Set(receiver.ids());

    // The crash left callbacks leased to the dead worker: it died mid-delivery.
    const depth = await f.store.queueDepth();
    expect(depth.callbacks.delivering).toBeGreaterThan(0);
    expect(depth.callbacks.delivering).toBeLessThanOrEqual(concurrency);

    const second = await spawnWorker('second', { leaseMs, concurrency, recover: kind.name === 'sqlite' });
    await second.go();
    await waitForStates(f, ids, 'delivered', 20_000);

    const counts = receiver.countsById();
    expect(ids.every((id) => (counts.get(id) ?? 0) >= 1)).toBe(true);
    const duplicates = ids.filter((id) => (counts.get(id) ?? 0) > 1);
    // Each duplicate was sent by the first worker, which died before recording the answer; the
    // second worker then sent it again. Nothing else may be sent twice.
    for (const id of duplicates) {
      expect(sentByFirst.has(id)).toBe(true);
      const attempts = await f.store.listAttempts(id);
      expect(attempts.map((a) => a.worker_id)).toEqual(['second']);
      expect(counts.get(id)).toBe(2);
    }
    expect(duplicates.length).toBeLessThanOrEqual(concurrency);
    console.info(`${kind.name}: ${duplicates.length} duplicate(s) after the crash, all explained`);
    expect(receiver.overlaps).toEqual([]);
    expect(second.stderr()).toBe('');
  });

  it('two workers on one queue never send one callback twice at the same time', async () => {
    const ids = await f.finishedMany(60, receiver.url);
    const workers = await Promise.all([
      spawnWorker('one', { leaseMs: 60_000, concurrency: 4 }),
      spawnWorker('two', { leaseMs: 60_000, concurrency: 4 }),
    ]);
    await Promise.all(workers.map((w) => w.go()));
    await waitForStates(f, ids, 'delivered', 20_000);

    expect(receiver.overlaps).toEqual([]);
    // No crash, leases longer than any delivery: nothing at all was sent twice.
    expect([...receiver.countsById().values()].every((n) => n === 1)).toBe(true);
    expect(receiver.requests).toHaveLength(60);
    // They did share the work.
    const byWorker = new Map<string, number>();
    for (const id of ids) {
      for (const a of await f.store.listAttempts(id)) {
        byWorker.set(a.worker_id ?? '', (byWorker.get(a.worker_id ?? '') ?? 0) + 1);
      }
    }
    expect(byWorker.get('one')).toBeGreaterThan(0);
    expect(byWorker.get('two')).toBeGreaterThan(0);
    expect(workers.map((w) => w.stderr())).toEqual(['', '']);
  });

  // On one backend is enough to show the check can fail; process starts are the slow part.
  it.runIf(kind.name === 'postgres')(
    '(control) the overlap check does catch leases shorter than a delivery',
    async () => {
      // Leases of 50 ms, never renewed, under answers of 100 ms lapse mid-request, so the other
      // worker takes the callback over while the first request is still open: exactly what the
      // test above rules out.
      const ids = await f.finishedMany(12, receiver.url);
      const workers = await Promise.all([
        spawnWorker('one', { leaseMs: 50, concurrency: 4, renewLeases: false }),
        spawnWorker('two', { leaseMs: 50, concurrency: 4, renewLeases: false }),
      ]);
      await Promise.all(workers.map((w) => w.go()));
      await waitForStates(f, ids, 'delivered', 20_000);
      expect(receiver.overlaps.length).toBeGreaterThan(0);
      expect(workers.map((w) => w.stderr()).join('')).toContain('lease_lost');
    },
  );
});
