/**
 * Every blob store keeps, streams back, replaces and removes result files alike, leaves nothing
 * of a write that failed, and takes part in delivery and the retention sweep the same way.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { blobKeyOf, type BlobStore } from '../../src/delivery/index.ts';
import { sqliteBackend } from '../store/backends.ts';
import { DeliveryFixture, jpegBytes, waitForStates } from '../delivery/harness.ts';
import { startRecordingReceiver } from '../delivery/receivers.ts';
import { type BlobBackend, blobBackends, closeSharedS3Server } from './blob-backends.ts';

const kinds = await blobBackends('blob stores');
afterAll(closeSharedS3Server);

/** Bytes in chunks of `chunkBytes`, made as they are asked for. */
async function* chunksOf(bytes: Buffer, chunkBytes = 64 * 1024): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += chunkBytes) yield bytes.subarray(at, at + chunkBytes);
}

async function keysOf(blobs: BlobStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of blobs.keys()) keys.push(key);
  return keys.sort();
}

describe.each(kinds)('blob store: $name', (kind) => {
  let backend: BlobBackend;
  let blobs: BlobStore;

  beforeEach(async () => {
    backend = await kind.create();
    blobs = backend.blobs;
  });
  afterEach(() => backend.dispose());

  it('keeps a file, reads it whole and streamed, and forgets it once removed', async () => {
    const bytes = jpegBytes(70_000);
    const key = blobKeyOf('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 'image/jpeg');
    expect(await blobs.put(key, chunksOf(bytes, 10_000))).toBe(bytes.length);
    expect(await blobs.size(key)).toBe(bytes.length);
    expect(await blobs.read(key, bytes.length)).toEqual(bytes);
    const opened = await blobs.open(key);
    expect(opened?.size).toBe(bytes.length);
    const streamed: Buffer[] = [];
    for await (const chunk of opened!.stream) streamed.push(chunk as Buffer);
    expect(Buffer.concat(streamed)).toEqual(bytes);
    expect(await keysOf(blobs)).toEqual([key]);

    await blobs.remove(key);
    expect([await blobs.read(key), await blobs.open(key), await blobs.size(key)]).toEqual([null, null, null]);
    expect(await keysOf(blobs)).toEqual([]);
    await blobs.remove(key); // removing twice is no error
  });

  it('replaces a file written again under its key', async () => {
    const key = blobKeyOf('op-1', 'video/mp4');
    await blobs.put(key, [randomBytes(3_000)]);
    const second = randomBytes(1_000);
    await blobs.put(key, [second]);
    expect(await blobs.read(key)).toEqual(second);
    expect(await keysOf(blobs)).toEqual([key]);
  });

  it('streams a file of several MiB both ways, in chunks, and reads it back exact', async () => {
    const bytes = randomBytes(9 * 1024 * 1024 + 123);
    const key = blobKeyOf('big', 'video/mp4');
    expect(await blobs.put(key, chunksOf(bytes))).toBe(bytes.length);
    const opened = await blobs.open(key);
    expect(opened?.size).toBe(bytes.length);
    const hash = createHash('sha256');
    let chunks = 0;
    let largest = 0;
    for await (const chunk of opened!.stream as AsyncIterable<Buffer>) {
      hash.update(chunk);
      chunks++;
      largest = Math.max(largest, chunk.length);
    }
    expect(hash.digest('hex')).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(chunks).toBeGreaterThan(1);
    expect(largest).toBeLessThan(bytes.length);
  });

  it('leaves nothing of a write whose bytes failed, and keeps the file it would have replaced', async () => {
    const key = blobKeyOf('op-2', 'image/jpeg');
    const kept = jpegBytes(5_000);
    await blobs.put(key, [kept]);
    async function* failing(): AsyncGenerator<Buffer> {
      yield randomBytes(6 * 1024 * 1024);
      throw new Error('the upload broke off');
    }
    await expect(blobs.put(key, failing())).rejects.toThrow('the upload broke off');
    expect(await blobs.read(key)).toEqual(kept);
    const other = blobKeyOf('op-3', 'image/jpeg');
    await expect(blobs.put(other, failing())).rejects.toThrow('the upload broke off');
    expect(await blobs.size(other)).toBeNull();
    expect(await keysOf(blobs)).toEqual([key]);
  });

  it('takes in a finished local file and removes it from where it was', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mediahook-made-'));
    try {
      const made = join(dir, 'out.jpg');
      const bytes = jpegBytes(4_000);
      writeFileSync(made, bytes);
      const key = blobKeyOf('op-4', 'image/jpeg');
      expect(await blobs.putFile(key, made)).toBe(bytes.length);
      expect(existsSync(made)).toBe(false);
      expect(await blobs.read(key)).toEqual(bytes);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes only keys it made, never a path', async () => {
    expect(() => blobKeyOf('../../etc/passwd', 'image/jpeg')).toThrow(TypeError);
    expect(() => blobKeyOf('a/b', 'image/jpeg')).toThrow(TypeError);
    await expect(blobs.read('x/../y.jpg')).rejects.toThrow(TypeError);
    await expect(blobs.put('../y.jpg', [Buffer.from('x')])).rejects.toThrow(TypeError);
    await expect(blobs.remove('/etc/passwd')).rejects.toThrow(TypeError);
  });
});

describe.each(kinds)('delivery and retention with blob store: $name', (kind) => {
  let backend: BlobBackend;
  let f: DeliveryFixture;

  beforeEach(async () => {
    backend = await kind.create();
    f = await DeliveryFixture.create(sqliteBackend, backend.blobs);
  });
  afterEach(async () => {
    await f.dispose();
    await backend.dispose();
  });

  it('delivers a large signed result streamed from the store, sweeps it after the retention', async () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const receiver = await startRecordingReceiver({ secret });
    f.defer(() => receiver.close());
    const large = jpegBytes(3 * 1024 * 1024);
    const small = jpegBytes(20_000);
    const ids = [
      await f.finished(receiver.url, 'file', large),
      await f.finished(receiver.url, 'file', small),
    ];
    const retentionMs = 60_000;
    const worker = await f.worker({
      retentionMs,
      senderOptions: { ssrf: { allowPrivate: true }, secrets: [secret] },
    });
    await waitForStates(f, ids, 'delivered');
    const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
    const received = receiver.outcomes.map((o) => [
      o.verdict,
      o.callback && 'file' in o.callback ? o.callback.file.sha256 : null,
    ]);
    expect(received.sort()).toEqual(
      [
        ['accepted', sha(large)],
        ['accepted', sha(small)],
      ].sort(),
    );

    expect(await worker.sweepResults(Date.now())).toBe(0);
    expect(await worker.sweepResults(Date.now() + retentionMs + 1_000)).toBe(2);
    expect(await keysOf(f.blobs)).toEqual([]);

    await f.store.redeliver('default', ids[0]!);
    await waitForStates(f, [ids[0]!], 'dead');
    expect((await f.store.listAttempts(ids[0]!)).at(-1)?.error).toMatch(/^result_missing/);
  });
});
