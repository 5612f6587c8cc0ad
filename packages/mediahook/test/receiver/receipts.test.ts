/**
 * Receipt stores (memory and directory) against one contract, receipts that outlive a restart,
 * what the directory store makes of hostile ids, crashes and a file system that fails, where a
 * receiver keeps them by default, and idempotency when the store answers slowly.
 */
import { mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createReceiver,
  DirectoryReceiptStore,
  MemoryReceiptStore,
  type Receipt,
  type ReceiptStore,
} from '../../src/receiver/index.ts';
import { ADAPTERS, startReceiver } from './adapters.ts';
import {
  expectFile,
  send,
  receiptFor,
  sha256,
  startStoreProcess,
  storedFiles,
  tempDir,
  wire,
} from './helpers.ts';

const STORES: { name: string; open(): Promise<ReceiptStore> }[] = [
  { name: 'MemoryReceiptStore', open: async () => new MemoryReceiptStore() },
  {
    name: 'DirectoryReceiptStore',
    open: async () => new DirectoryReceiptStore(join(await tempDir(), 'nested', '.mediahook')),
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

describe('DirectoryReceiptStore on disk', () => {
  it('keeps receipts across instances of the same directory, as across a restart', async () => {
    const dir = join(await tempDir(), '.mediahook');
    const first = new DirectoryReceiptStore(dir);
    await first.add(receiptFor('op-1'));
    await first.close();
    await first.close(); // closing twice is harmless
    const second = new DirectoryReceiptStore(dir);
    expect(await second.get('op-1')).toEqual(receiptFor('op-1'));
    expect(await second.add(receiptFor('op-1', { status: 'other' }))).toBe(false);
    expect(await second.list()).toEqual([receiptFor('op-1')]);
    await second.close();
  });

  it('keeps any id_gen inside its directory, under a name that is not the id', async () => {
    const root = await tempDir();
    const dir = join(root, 'out', '.mediahook');
    const store = new DirectoryReceiptStore(dir);
    const ids = [
      '../../../../../../tmp/escaped',
      '..',
      '.',
      '/',
      'a/../../b/./c//d/',
      '..\\..\\windows\\win.ini',
      'CON',
      'nul.txt',
      ' trailing space ',
      'żółw 🐢 日本語 \u202eexe.jpg \u0000'.replace('\u0000', '\u2028'),
      // One letter composed and decomposed: two ids, whatever the file system normalizes.
      'caf\u00e9',
      'cafe\u0301',
      'x'.repeat(256),
      'é'.repeat(128), // 256 bytes of UTF-8
    ];
    for (const id of ids) expect(await store.add(receiptFor(id))).toBe(true);
    for (const id of ids) expect(await store.get(id)).toEqual(receiptFor(id));
    expect((await store.list()).map((receipt) => receipt.id_gen).sort()).toEqual([...ids].sort());
    expect(await readdir(root)).toEqual(['out']);
    expect(await readdir(join(root, 'out'))).toEqual(['.mediahook']);
    const names = await readdir(join(dir, 'receipts'));
    expect(names).toHaveLength(ids.length);
    for (const name of names) expect(name).toMatch(/^[0-9a-f]{64}\.json$/);
    await store.close();
  });

  it('keeps two ids that differ only in case apart', async () => {
    const store = new DirectoryReceiptStore(join(await tempDir(), '.mediahook'));
    expect(await store.add(receiptFor('Op-ABC', { status: 'upper' }))).toBe(true);
    expect(await store.add(receiptFor('op-abc', { status: 'lower' }))).toBe(true);
    expect(await store.get('Op-ABC')).toMatchObject({ status: 'upper' });
    expect(await store.get('op-abc')).toMatchObject({ status: 'lower' });
    expect(await store.get('OP-ABC')).toBeUndefined();
    expect(await store.claim('OP-ABC', 'a', 60_000)).toBe(true);
    await store.close();
  });

  it('makes its files 0600 and its folders 0700, and leaves the mode of the folder it is in', async () => {
    const root = await tempDir();
    const dir = join(root, 'out', '.mediahook');
    const store = new DirectoryReceiptStore(dir);
    await store.add(receiptFor('op-1'));
    expect(await store.claim('op-2', 'a', 60_000)).toBe(true);
    const mode = async (path: string) => (await stat(path)).mode & 0o777;
    for (const folder of ['', 'receipts', 'claims', 'tmp']) expect(await mode(join(dir, folder))).toBe(0o700);
    for (const folder of ['receipts', 'claims']) {
      const [name] = await readdir(join(dir, folder));
      expect(await mode(join(dir, folder, name!))).toBe(0o600);
    }
    // `out` is the receiver's, made as any folder of the process is.
    expect(await mode(join(root, 'out'))).toBe(0o777 & ~process.umask());
    await store.close();
  });

  it('sweeps the temporary files of a process that died, and leaves a fresh one', async () => {
    const dir = join(await tempDir(), '.mediahook');
    await mkdir(join(dir, 'tmp'), { recursive: true });
    const old = join(dir, 'tmp', 'died-mid-write.tmp');
    const fresh = join(dir, 'tmp', 'being-written.tmp');
    await writeFile(old, '{"stamp":1,"rec');
    await writeFile(fresh, '{"stamp":2,"rec');
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(old, twoHoursAgo, twoHoursAgo);
    const store = new DirectoryReceiptStore(dir);
    // Closing waits for the sweep that opening started.
    await store.close();
    expect(await readdir(join(dir, 'tmp'))).toEqual(['being-written.tmp']);
  });

  it('counts a receipt cut short by a crash as absent, so the callback can be handled again', async () => {
    const dir = join(await tempDir(), '.mediahook');
    const store = new DirectoryReceiptStore(dir);
    await store.add(receiptFor('op-1'));
    await store.add(receiptFor('op-2'));
    const [name] = await readdir(join(dir, 'receipts'));
    const path = join(dir, 'receipts', name!);
    const text = await readFile(path, 'utf8');
    // What a power loss can leave of a file whose data was not yet written back.
    await writeFile(path, text.slice(0, text.length / 2));
    const damaged = (await store.get('op-1')) === undefined ? 'op-1' : 'op-2';
    const intact = damaged === 'op-1' ? 'op-2' : 'op-1';
    expect(await store.get(damaged)).toBeUndefined();
    expect(await store.list()).toEqual([receiptFor(intact)]);
    expect(await store.claim(damaged, 'a', 60_000)).toBe(true);
    expect(await store.add(receiptFor(damaged))).toBe(true);
    expect(await store.get(damaged)).toEqual(receiptFor(damaged));
    expect(await readdir(join(dir, 'tmp'))).toEqual([]);
    await store.close();
  });

  it('never shows another process a receipt half-written', async () => {
    const dir = join(await tempDir(), '.mediahook');
    const writer = await startStoreProcess(dir);
    // Messages of 4 MiB: a file written in place would be seen empty, then part-way.
    const receipts = Array.from({ length: 8 }, (_, i) =>
      receiptFor(`op-${i}`, { event: 'error', message: String(i).repeat(4 * 1024 * 1024) }),
    );
    const written = writer({ add: receipts });
    // Each receipt's file, read the moment its name appears.
    const seen: string[] = [];
    for (const { id_gen } of receipts) {
      const path = join(dir, 'receipts', `${sha256(Buffer.from(id_gen))}.json`);
      for (;;) {
        const text = await readFile(path, 'utf8').catch(() => null);
        if (text !== null) {
          seen.push(text);
          break;
        }
      }
    }
    expect(await written).toEqual(receipts.map(() => true));
    for (const [i, text] of seen.entries()) expect(JSON.parse(text)).toMatchObject({ receipt: receipts[i] });
  });

  it("rejects with the file system's error when it cannot write, and leaves nothing behind", async () => {
    const root = await tempDir();
    await writeFile(join(root, 'a-file'), '');
    const nowhere = new DirectoryReceiptStore(join(root, 'a-file', '.mediahook'));
    await expect(nowhere.add(receiptFor('op-1'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(nowhere.claim('op-1', 'a', 60_000)).rejects.toMatchObject({ code: 'ENOTDIR' });
    await nowhere.close();

    const dir = join(root, '.mediahook');
    const store = new DirectoryReceiptStore(dir);
    await store.add(receiptFor('op-1'));
    // The receipts folder replaced by a file: the receipt is written aside, then cannot be linked.
    await rm(join(dir, 'receipts'), { recursive: true });
    await writeFile(join(dir, 'receipts'), '');
    await expect(store.add(receiptFor('op-2'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    expect(await readdir(join(dir, 'tmp'))).toEqual([]);
    await store.close();
  });
});

describe('a receiver on its default store', () => {
  it('keeps its receipts in <out>/.mediahook and nothing else of its own in out', async () => {
    const out = await tempDir();
    const success = await wire({ family: 'A', event: 'success' });
    const error = await wire({ family: 'B', event: 'error' });
    for (let restart = 0; restart < 2; restart++) {
      const receiver = createReceiver({ out });
      for (const callback of [success, error]) {
        const answer = await receiver.handle({
          header: (name) => callback.headers[name],
          body: callback.body,
        });
        expect(JSON.parse(answer.body)).toMatchObject({ received: true, duplicate: restart === 1 });
      }
      expect(await receiver.store.get(error.id)).toMatchObject({ id_gen: error.id, event: 'error' });
      await receiver.close();
    }
    expect((await readdir(out)).sort()).toEqual(['.mediahook', `${success.id}.jpg`]);
    expect((await readdir(join(out, '.mediahook'))).sort()).toEqual(['claims', 'receipts', 'tmp']);
    expect(await readdir(join(out, '.mediahook', 'receipts'))).toHaveLength(2);
    expect(await readdir(join(out, '.mediahook', 'claims'))).toEqual([]);
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
