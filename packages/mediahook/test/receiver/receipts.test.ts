/**
 * Receipt stores (memory and SQLite) against one contract, receipts that outlive a restart,
 * and idempotency when the store answers slowly.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  MemoryReceiptStore,
  type Receipt,
  type ReceiptStore,
  SqliteReceiptStore,
} from '../../src/receiver/index.ts';
import { ADAPTERS, startReceiver } from './adapters.ts';
import { expectFile, send, receiptFor, storedFiles, tempDir, wire } from './helpers.ts';

const STORES: { name: string; open(): Promise<ReceiptStore> }[] = [
  { name: 'MemoryReceiptStore', open: async () => new MemoryReceiptStore() },
  {
    name: 'SqliteReceiptStore',
    open: async () => new SqliteReceiptStore(join(await tempDir(), 'nested', 'receipts.sqlite')),
  },
];

describe.each(STORES)('$name', ({ open }) => {
  it('gets what it added, and nothing for an unknown id', async () => {
    const store = await open();
    const first = receiptFor('op-1');
    expect(await store.get('op-1')).toBeUndefined();
    expect(await store.add(first)).toBe(true);
    expect(await store.get('op-1')).toEqual(first);
    expect(await store.get('op-2')).toBeUndefined();
    await store.close();
  });

  it('keeps an error receipt with its nulls', async () => {
    const store = await open();
    const error = receiptFor('op-e', {
      event: 'error',
      family: 'B',
      message: 'bad prompt',
      file_path: null,
      media_type: null,
      bytes: null,
      sha256: null,
    });
    await store.add(error);
    expect(await store.get('op-e')).toEqual(error);
    await store.close();
  });

  it('answers false to a repeated id and keeps the first receipt', async () => {
    const store = await open();
    expect(await store.add(receiptFor('op-1'))).toBe(true);
    expect(await store.add(receiptFor('op-1', { status: 'other', bytes: 1 }))).toBe(false);
    expect(await store.get('op-1')).toMatchObject({ status: 'success', bytes: 1234 });
    expect(await store.list()).toHaveLength(1);
    await store.close();
  });

  it('lists the newest first, 100 by default, fewer on request', async () => {
    const store = await open();
    for (let i = 0; i < 105; i++) await store.add(receiptFor(`op-${i}`));
    const all = await store.list();
    expect(all).toHaveLength(100);
    expect(all[0]?.id_gen).toBe('op-104');
    expect(all[99]?.id_gen).toBe('op-5');
    expect((await store.list({ limit: 3 })).map((r) => r.id_gen)).toEqual(['op-104', 'op-103', 'op-102']);
    await store.close();
  });

  it('takes a copy, so changing the object afterwards changes nothing', async () => {
    const store = await open();
    const first = receiptFor('op-1');
    await store.add(first);
    first.status = 'mutated';
    expect((await store.get('op-1'))?.status).toBe('success');
    await store.close();
  });
});

describe('SqliteReceiptStore on disk', () => {
  it('keeps receipts across instances of the same file', async () => {
    const path = join(await tempDir(), 'receipts.sqlite');
    const first = new SqliteReceiptStore(path);
    await first.add(receiptFor('op-1'));
    await first.close();
    await first.close(); // closing twice is harmless
    const second = new SqliteReceiptStore(path);
    expect(await second.get('op-1')).toEqual(receiptFor('op-1'));
    expect(await second.add(receiptFor('op-1'))).toBe(false);
    await second.close();
  });
});

/** A store whose reads take a while, like one on a database server. */
class SlowStore extends MemoryReceiptStore {
  override async get(idGen: string): Promise<Receipt | undefined> {
    await new Promise((resolve) => setTimeout(resolve, 30));
    return super.get(idGen);
  }
}

describe.each(ADAPTERS)('$name receipts', (adapter) => {
  it('answers duplicate after a restart on the same output directory', async () => {
    const out = await tempDir();
    const callback = await wire({ family: 'A', event: 'success' });
    const before = await startReceiver(adapter, { out });
    expect((await send(before.url, callback)).body.duplicate).toBe(false);
    await before.close();
    await before.receiver.close();

    const after = await startReceiver(adapter, { out });
    const answer = await send(after.url, callback);
    expect(answer).toEqual({ status: 200, body: { received: true, id_gen: callback.id, duplicate: true } });
    expect(after.successes).toHaveLength(0);
    expect(await storedFiles(out)).toEqual([`${callback.id}.jpg`]);
    // The duplicate's bytes were dropped; its outcome has the receipt of the file stored the first time.
    expect(after.outcomes[0]?.callback).toMatchObject({ file: { path: null } });
    expect(after.outcomes[0]?.receipt).toMatchObject({ file_path: join(out, `${callback.id}.jpg`) });
  });

  it('handles concurrent copies once even when the store is slow to answer', async () => {
    const harness = await startReceiver(adapter, { store: new SlowStore() });
    const callback = await wire({ family: 'A', event: 'success' });
    const answers = await Promise.all(Array.from({ length: 5 }, () => send(harness.url, callback)));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.filter((answer) => answer.body.duplicate === false)).toHaveLength(1);
    expect(harness.successes).toHaveLength(1);
    expect(await storedFiles(harness.out)).toEqual([`${callback.id}.jpg`]);
    await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
  });

  it('hands a waiting copy the callback when the copy before it failed in the handler', async () => {
    let calls = 0;
    const harness = await startReceiver(adapter, {
      store: new SlowStore(),
      onSuccess: async () => {
        calls++;
        if (calls > 1) return;
        // The first copy fails only once the others are surely waiting for it.
        await new Promise((resolve) => setTimeout(resolve, 100));
        throw new Error('disk full');
      },
    });
    const callback = await wire({ family: 'A', event: 'success' });
    const answers = await Promise.all(Array.from({ length: 4 }, () => send(harness.url, callback)));
    const failed = answers.filter((answer) => answer.status === 500);
    expect(failed).toHaveLength(1);
    expect(failed[0]?.body).toMatchObject({ error: { code: 'handler_failed' } });
    const accepted = answers.filter((answer) => answer.status === 200);
    expect(accepted.map((answer) => answer.body.duplicate).sort()).toEqual([false, true, true]);
    expect(calls).toBe(2);
    expect(await storedFiles(harness.out)).toEqual([`${callback.id}.jpg`]);
    await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
  });
});
