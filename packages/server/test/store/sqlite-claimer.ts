/**
 * A separate process claiming callbacks from a SQLite store file until none is due. It says
 * `ready` once its connection is open, starts on a line on stdin (so that all claimers start
 * together), and prints what it claimed as one JSON line. Run by sqlite-processes.test.ts.
 */
import { once } from 'node:events';
import { setTimeout } from 'node:timers/promises';
import { SqliteStore } from '../../src/store/index.ts';

const [path, worker] = process.argv.slice(2);
if (path === undefined || worker === undefined) throw new Error('usage: sqlite-claimer PATH WORKER');
const store = new SqliteStore(path, { busyTimeoutMs: 10_000 });
await store.queueDepth();
process.stdout.write('ready\n');
await once(process.stdin, 'data');
process.stdin.pause();

const claimed: string[] = [];
for (;;) {
  const batch = await store.claimCallbacks(worker, { limit: 1 + (claimed.length % 4), leaseMs: 60_000 });
  if (batch.length === 0) break;
  claimed.push(...batch.map((c) => c.callback.id_gen));
  // A breath between claims, so that one process cannot drain the queue before the others start.
  await setTimeout(2);
}
await store.close();
process.stdout.write(`${JSON.stringify(claimed)}\n`);
