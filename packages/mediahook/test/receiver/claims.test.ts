/**
 * Claims that keep copies of one callback apart across receivers sharing a receipts store: the
 * claim contract on both stores, processes racing for fresh and expired claims, receivers in
 * separate processes racing over real HTTP, a holder killed mid-handler, a copy whose sender
 * goes away while it waits, the bound on the wait, and a failed handler's claim let go.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import {
  createReceiver,
  DirectoryReceiptStore,
  MemoryReceiptStore,
  nodeHandler,
  type ReceiptClaims,
  type ReceiptStore,
  type ReceiverOptions,
  type ReceiverOutcome,
} from '../../src/receiver/index.ts';
import { listen } from './adapters.ts';
import type { ReceiverProcessConfig } from './fixtures/receiver-process.ts';
import { eventually, send, receiptFor, startStoreProcess, storedFiles, tempDir, wire } from './helpers.ts';

const RECEIVER_PROCESS = fileURLToPath(new URL('fixtures/receiver-process.ts', import.meta.url));
const LONG = 60_000;

type ClaimingStore = ReceiptStore & ReceiptClaims;

const STORES: { name: string; open(): Promise<ClaimingStore> }[] = [
  { name: 'MemoryReceiptStore', open: async () => new MemoryReceiptStore() },
  {
    name: 'DirectoryReceiptStore',
    open: async () => new DirectoryReceiptStore(join(await tempDir(), '.mediahook')),
  },
];

describe.each(STORES)('claims of a $name', ({ open }) => {
  it('go to the first holder; its own claim is taken again, another holder is refused', async () => {
    const store = await open();
    expect(await store.claim('op-1', 'a', LONG)).toBe(true);
    expect(await store.claim('op-1', 'a', LONG)).toBe(true);
    expect(await store.claim('op-1', 'b', LONG)).toBe(false);
    expect(await store.claim('op-2', 'b', LONG)).toBe(true);
    await store.close();
  });

  it('are renewed and released by their holder only', async () => {
    const store = await open();
    await store.claim('op-1', 'a', LONG);
    expect(await store.renew('op-1', 'a', LONG)).toBe(true);
    expect(await store.renew('op-1', 'b', LONG)).toBe(false);
    await store.release('op-1', 'b');
    expect(await store.claim('op-1', 'b', LONG)).toBe(false);
    await store.release('op-1', 'a');
    expect(await store.renew('op-1', 'a', LONG)).toBe(false);
    expect(await store.claim('op-1', 'b', LONG)).toBe(true);
    await store.close();
  });

  it('are taken over once expired, and the first holder then holds nothing', async () => {
    const store = await open();
    // A lifetime of 0 is over at once: no clock to wait for.
    expect(await store.claim('op-1', 'a', 0)).toBe(true);
    expect(await store.claim('op-1', 'b', LONG)).toBe(true);
    expect(await store.renew('op-1', 'a', LONG)).toBe(false);
    expect(await store.claim('op-1', 'a', LONG)).toBe(false);
    await store.release('op-1', 'a');
    expect(await store.claim('op-1', 'c', LONG)).toBe(false);
    await store.close();
  });

  it('are dropped by the receipt, and refused to anyone once a receipt exists', async () => {
    const store = await open();
    expect(await store.claim('op-1', 'a', LONG)).toBe(true);
    expect(await store.add(receiptFor('op-1'))).toBe(true);
    expect(await store.renew('op-1', 'a', LONG)).toBe(false);
    expect(await store.claim('op-1', 'a', LONG)).toBe(false);
    expect(await store.claim('op-1', 'b', LONG)).toBe(false);
    // Recorded by a receiver that never claimed it: still refused.
    expect(await store.add(receiptFor('op-2'))).toBe(true);
    expect(await store.claim('op-2', 'a', LONG)).toBe(false);
    expect(await store.get('op-1')).toEqual(receiptFor('op-1'));
    await store.close();
  });
});

interface ReceiverProcess {
  child: ChildProcess;
  url: string;
}

const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
});

/** Starts a receiver process (fixtures/receiver-process.ts) and waits until it listens. */
async function startProcess(config: ReceiverProcessConfig): Promise<ReceiverProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', RECEIVER_PROCESS, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  children.push(child);
  let output = '';
  let errors = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  await eventually(() => {
    if (child.exitCode !== null) throw new Error(`the receiver process exited ${child.exitCode}: ${errors}`);
    return output.includes('\n');
  }, 15_000);
  const { port } = JSON.parse(output.split('\n')[0] ?? '') as { port: number };
  return { child, url: `http://127.0.0.1:${port}/callbacks` };
}

const hexOf = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('claims of a DirectoryReceiptStore directory', () => {
  it('hold between two stores on one directory, as between two processes', async () => {
    const dir = join(await tempDir(), '.mediahook');
    const one = new DirectoryReceiptStore(dir);
    const two = new DirectoryReceiptStore(dir);
    expect(await one.claim('op-1', 'a', LONG)).toBe(true);
    expect(await two.claim('op-1', 'b', LONG)).toBe(false);
    expect(await one.add(receiptFor('op-1'))).toBe(true);
    expect(await two.get('op-1')).toEqual(receiptFor('op-1'));
    expect(await two.claim('op-1', 'b', LONG)).toBe(false);
    await one.close();
    await two.close();
  });

  it('step over the takeover lock of a taker that died once it is older than a claim lasts', async () => {
    const dir = join(await tempDir(), '.mediahook');
    const store = new DirectoryReceiptStore(dir);
    expect(await store.claim('op-1', 'dead', 0)).toBe(true);
    const key = hexOf('op-1');
    const instance = hexOf(await readFile(join(dir, 'claims', `${key}.json`), 'utf8')).slice(0, 32);
    const lock = join(dir, 'claims', `${key}.${instance}.0.lock`);
    // What a taker killed between taking the lock and replacing the claim leaves.
    await writeFile(lock, '');
    expect(await store.claim('op-1', 'b', 2_000)).toBe(false);
    const ago = (ms: number) => new Date(Date.now() - ms);
    await utimes(lock, ago(5_000), ago(5_000));
    expect(await store.claim('op-1', 'b', 2_000)).toBe(true);
    expect(await store.claim('op-1', 'c', 2_000)).toBe(false);
    await store.close();
    // Swept once an hour old, as it guards a claim that is gone; a fresh claim stays.
    await utimes(lock, ago(2 * 3_600_000), ago(2 * 3_600_000));
    const reopened = new DirectoryReceiptStore(dir);
    await reopened.close();
    expect(await readdir(join(dir, 'claims'))).toEqual([`${key}.json`]);
    expect(await reopened.claim('op-1', 'c', 2_000)).toBe(false);
  });

  it('left by processes that died are swept once expired an hour, and not before', async () => {
    const dir = join(await tempDir(), '.mediahook');
    const store = new DirectoryReceiptStore(dir);
    expect(await store.claim('long-gone', 'dead', -2 * 3_600_000)).toBe(true);
    expect(await store.claim('just-gone', 'dead', -60_000)).toBe(true);
    await store.close();
    const reopened = new DirectoryReceiptStore(dir);
    await reopened.close();
    expect(await readdir(join(dir, 'claims'))).toEqual([`${hexOf('just-gone')}.json`]);
    expect(await readdir(join(dir, 'tmp'))).toEqual([]);
  });
});

describe('processes racing for claims in one directory', () => {
  it('give each fresh claim, and each expired one, to exactly one of them', async () => {
    const dir = join(await tempDir(), '.mediahook');
    const racers = await Promise.all(Array.from({ length: 6 }, () => startStoreProcess(dir)));
    const fresh = Array.from({ length: 40 }, (_, i) => `fresh-${i}`);
    const expired = Array.from({ length: 40 }, (_, i) => `expired-${i}`);
    const seeder = new DirectoryReceiptStore(dir);
    onTestFinished(() => seeder.close());
    for (const id of expired) expect(await seeder.claim(id, 'dead', 0)).toBe(true);
    for (const ids of [fresh, expired]) {
      // Every process claims every id, all at once.
      const held = (await Promise.all(racers.map((ask) => ask({ claim: ids, ttlMs: LONG })))) as string[][];
      for (const id of ids) {
        const holders = held.filter((ours) => ours.includes(id));
        expect(holders, id).toHaveLength(1);
      }
    }
  }, 60_000);
});

/** The pids whose handler ran, by id_gen, in the order they wrote to the log. */
async function handlerCalls(log: string): Promise<Map<string, string[]>> {
  const calls = new Map<string, string[]>();
  for (const line of (await readFile(log, 'utf8')).split('\n')) {
    if (!line) continue;
    const [pid = '', id = ''] = line.split(' ');
    calls.set(id, [...(calls.get(id) ?? []), pid]);
  }
  return calls;
}

async function sharedDirectory(): Promise<{ out: string; log: string }> {
  const dir = await tempDir();
  const log = join(dir, 'handled.log');
  await writeFile(log, '');
  return { out: join(dir, 'out'), log };
}

describe('receivers in separate processes sharing one out directory', () => {
  it('run the handler once per callback when its copies race into all of them', async () => {
    const { out, log } = await sharedDirectory();
    const processes = await Promise.all([0, 1, 2].map(() => startProcess({ out, log, sleepMs: 20 })));
    const callbacks = await Promise.all(Array.from({ length: 30 }, () => wire()));
    // Every copy of a callback goes to a different process, all at once.
    const answers = await Promise.all(
      callbacks.map((callback, i) =>
        Promise.all(processes.map((_, k) => send(processes[(i + k) % processes.length]!.url, callback))),
      ),
    );
    for (const copies of answers) {
      expect(copies.map((answer) => answer.status)).toEqual([200, 200, 200]);
      expect(copies.map((answer) => answer.body.duplicate).sort()).toEqual([false, true, true]);
    }
    const calls = await handlerCalls(log);
    const ids = callbacks.map((callback) => callback.id).sort();
    expect([...calls.keys()].sort()).toEqual(ids);
    for (const id of ids) expect(calls.get(id)).toHaveLength(1);
    expect(await storedFiles(out)).toEqual(ids.map((id) => `${id}.jpg`).sort());
  });

  it('run the handler once when many processes each get several copies of one callback at once', async () => {
    const { out, log } = await sharedDirectory();
    const processes = await Promise.all(
      Array.from({ length: 6 }, () => startProcess({ out, log, sleepMs: 5 })),
    );
    const callbacks = await Promise.all(Array.from({ length: 10 }, () => wire()));
    // Twelve copies of each callback, two into every process, all at once.
    const answers = await Promise.all(
      callbacks.map((callback) =>
        Promise.all(processes.flatMap(({ url }) => [send(url, callback), send(url, callback)])),
      ),
    );
    for (const copies of answers) {
      expect(copies.map((answer) => answer.status)).toEqual(copies.map(() => 200));
      expect(copies.filter((answer) => answer.body.duplicate === false)).toHaveLength(1);
    }
    const calls = await handlerCalls(log);
    for (const callback of callbacks) expect(calls.get(callback.id), callback.id).toHaveLength(1);
    expect(await storedFiles(out)).toEqual(callbacks.map((callback) => `${callback.id}.jpg`).sort());
  }, 60_000);

  it('take over the claim of a process killed mid-handler once it lapses, and handle the callback once', async () => {
    const { out, log } = await sharedDirectory();
    // A claim that never lapsed would leave the survivor's copy to end in_progress, in 10 s.
    const [doomed, survivor] = await Promise.all([
      startProcess({ out, log, sleepMs: 0, hang: true, claimTtlMs: 1_000 }),
      startProcess({ out, log, sleepMs: 0, claimTtlMs: 1_000, claimWaitMs: 10_000 }),
    ]);
    const callback = await wire();
    const first = send(doomed!.url, callback).catch((error: unknown) => error);
    await eventually(async () => (await handlerCalls(log)).has(callback.id), 10_000);
    // The doomed process holds the claim, renewing it (a probe with no lifetime takes nothing).
    const probe = new DirectoryReceiptStore(join(out, '.mediahook'));
    onTestFinished(() => probe.close());
    expect(await probe.claim(callback.id, 'probe', 0)).toBe(false);
    const second = send(survivor!.url, callback);
    doomed!.child.kill('SIGKILL');
    await once(doomed!.child, 'exit');
    expect(await first).toBeInstanceOf(Error);
    expect(await second).toMatchObject({ status: 200, body: { duplicate: false } });
    const pids = [doomed!.child.pid, survivor!.child.pid].map(String);
    expect((await handlerCalls(log)).get(callback.id)).toEqual(pids);
    expect(await send(survivor!.url, callback)).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(await storedFiles(out)).toEqual([`${callback.id}.jpg`]);
  });
});

/** A store that tells when a claim was refused: the copy is then waiting. */
class WatchedStore extends DirectoryReceiptStore {
  refused = 0;
  override async claim(idGen: string, holder: string, ttlMs: number): Promise<boolean> {
    const held = await super.claim(idGen, holder, ttlMs);
    if (!held) this.refused += 1;
    return held;
  }
}

/**
 * A receiver on node:http in this process, on `out`'s receipts directory, and another store on
 * that directory standing for another process.
 */
async function receiverBeside(out: string, options: ReceiverOptions = {}) {
  const dir = join(out, '.mediahook');
  const store = new WatchedStore(dir);
  const other = new DirectoryReceiptStore(dir);
  const handled: string[] = [];
  const outcomes: ReceiverOutcome[] = [];
  const receiver = createReceiver({
    out,
    store,
    onSuccess: (callback) => void handled.push(callback.id_gen),
    onOutcome: (outcome) => void outcomes.push(outcome),
    ...options,
  });
  const server = await listen(createServer(nodeHandler(receiver)));
  onTestFinished(async () => {
    await server.close();
    await receiver.close();
    await other.close();
  });
  return { store, other, handled, outcomes, url: server.url };
}

describe('a copy waiting for another holder', () => {
  it('stops when its sender goes away, leaving nothing behind and nothing stuck', async () => {
    const out = await tempDir();
    const { store, other, handled, outcomes, url } = await receiverBeside(out);
    const callback = await wire();
    expect(await other.claim(callback.id, 'another-process', LONG)).toBe(true);
    const controller = new AbortController();
    const sent = request(url, {
      method: 'POST',
      body: callback.body,
      headers: callback.headers,
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await eventually(() => store.refused > 0);
    controller.abort();
    expect(await sent).toBeInstanceOf(Error);
    await eventually(() => outcomes.length === 1);
    expect(outcomes[0]).toMatchObject({ verdict: 'rejected', error: { code: 'aborted' } });
    expect(handled).toEqual([]);
    expect(await storedFiles(out)).toEqual([]);
    // Nothing left waiting in this receiver: once the other holder lets go, a copy goes through.
    await other.release(callback.id, 'another-process');
    expect(await send(url, callback)).toMatchObject({ status: 200, body: { duplicate: false } });
    expect(handled).toEqual([callback.id]);
  });

  it('is answered as a duplicate when the holder records its receipt', async () => {
    const out = await tempDir();
    const { store, other, handled, url } = await receiverBeside(out);
    const callback = await wire();
    await other.claim(callback.id, 'another-process', LONG);
    const answer = send(url, callback);
    await eventually(() => store.refused > 0);
    await other.add(receiptFor(callback.id));
    expect(await answer).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(handled).toEqual([]);
    expect(await storedFiles(out)).toEqual([]);
  });

  it('gives up with in_progress after claimWaitMs, keeping nothing', async () => {
    const out = await tempDir();
    const { other, handled, url } = await receiverBeside(out, { claimWaitMs: 50 });
    const callback = await wire();
    await other.claim(callback.id, 'another-process', LONG);
    const answer = await send(url, callback);
    expect(answer).toMatchObject({ status: 500, body: { error: { code: 'in_progress' } } });
    expect(handled).toEqual([]);
    expect(await storedFiles(out)).toEqual([]);
  });
});

describe('a claim held by a receiver', () => {
  it('is released when the handler fails, so another receiver handles the redelivery as new', async () => {
    const out = await tempDir();
    const failing = await receiverBeside(out, {
      onSuccess: () => {
        throw new Error('not now');
      },
    });
    // No waiting: a claim left behind would be answered in_progress at once.
    const next = await receiverBeside(out, { claimWaitMs: 0 });
    const callback = await wire();
    expect(await send(failing.url, callback)).toMatchObject({
      status: 500,
      body: { error: { code: 'handler_failed' } },
    });
    expect(await send(next.url, callback)).toMatchObject({ status: 200, body: { duplicate: false } });
    expect(next.handled).toEqual([callback.id]);
  });

  it('is renewed while a slow handler runs, past its lifetime', async () => {
    const out = await tempDir();
    let entered = false;
    let finish = () => {};
    const gate = new Promise<void>((resolve) => (finish = resolve));
    const { other, url } = await receiverBeside(out, {
      claimTtlMs: 600,
      onSuccess: async () => {
        entered = true;
        await gate;
      },
    });
    const callback = await wire();
    const answer = send(url, callback);
    await eventually(() => entered);
    // Twice the claim's lifetime, and still held.
    for (let i = 0; i < 4; i++) {
      await sleep(300);
      expect(await other.claim(callback.id, 'intruder', LONG)).toBe(false);
    }
    finish();
    expect(await answer).toMatchObject({ status: 200, body: { duplicate: false } });
    expect(await other.claim(callback.id, 'intruder', LONG)).toBe(false);
    expect(await other.get(callback.id)).toMatchObject({ id_gen: callback.id });
  });
});
