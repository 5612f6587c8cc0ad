/**
 * The retention sweep leaves nothing behind on any blob store: a file no operation owns (its
 * writer died before recording it) goes once it is an hour old, while the file of an operation
 * still being generated, and a result whose callback is not final, stay; a removal that fails
 * is reported with its key and tried again by the next sweep.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { blobKeyOf, type DirectoryBlobStore } from '../../src/delivery/index.ts';
import { sweepResults } from '../../src/delivery/result-sweep.ts';
import type { Store } from '../../src/store/index.ts';
import { type BlobBackend, blobBackends, closeSharedS3Server } from '../blobs/blob-backends.ts';
import { type Backend, postgresBackend, probePostgres, sqliteBackend } from '../store/backends.ts';

process.env['AWS_EC2_METADATA_DISABLED'] = 'true';
const blobKinds = await blobBackends('result sweep');
const storeKinds = (await probePostgres()) ? [sqliteBackend] : [sqliteBackend, postgresBackend];
afterAll(closeSharedS3Server);

const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 0xff, 0xd9]);
const AN_HOUR_ON = () => Date.now() + 3_600_000 + 60_000;

describe.each(storeKinds.flatMap((store) => blobKinds.map((blobs) => ({ store, blobs }))))(
  'the sweep on $store.name with $blobs.name files',
  ({ store: storeKind, blobs: blobKind }) => {
    let backend: Backend;
    let store: Store;
    let blobBackend: BlobBackend;

    beforeEach(async () => {
      backend = await storeKind.create();
      store = backend.open();
      await store.migrate();
      blobBackend = await blobKind.create();
    });
    afterEach(async () => {
      await blobBackend.dispose();
      await backend.dispose();
    });

    const keys = async () => {
      const found: string[] = [];
      for await (const key of blobBackend.blobs.keys()) found.push(key);
      return found.sort();
    };

    it('removes a file no operation owns once it is an hour old, and keeps what is owned', async () => {
      const { blobs } = blobBackend;
      const orphan = blobKeyOf('handed-in-and-lost', 'image/jpeg', '0123456789ab');
      const generating = randomUUID();
      await store.createOperation({
        id_gen: generating,
        client: 'default',
        kind: 'image',
        family: 'A',
        webhook_url: 'http://127.0.0.1:9/hook',
        prompt: 'p',
      });
      const written = blobKeyOf(generating, 'image/jpeg');
      for (const key of [orphan, written]) await blobs.put(key, [JPEG]);
      const errors: unknown[] = [];

      expect(await sweepResults(store, blobs, { now: Date.now(), onError: (e) => errors.push(e) })).toBe(0);
      expect(await keys()).toEqual([orphan, written].sort());
      expect(await sweepResults(store, blobs, { now: AN_HOUR_ON(), onError: (e) => errors.push(e) })).toBe(1);
      // The operation is still queued: its file is being written by its generation.
      expect(await keys()).toEqual([written]);
      if (blobKind.name === 's3') {
        // s3rver answers NotImplemented to a listing of multipart uploads: the abort is reported.
        expect(errors.map(String).join()).toMatch(/NotImplemented|not implemented/i);
      } else expect(errors).toEqual([]);
    });

    it.runIf(blobKind.name === 'directory')(
      'reports a removal that fails with its key, and removes the file at the next sweep',
      async () => {
        const blobs = blobBackend.blobs as DirectoryBlobStore;
        const key = blobKeyOf('half-written', 'image/jpeg', 'abcdef012345');
        // A directory where the file should be: unlinking it fails.
        await mkdir(join(blobs.directory, key), { recursive: true });
        const errors: unknown[] = [];
        await sweepResults(store, blobs, { now: AN_HOUR_ON(), onError: (e) => errors.push(e) });
        expect(errors.map(String)).toEqual([expect.stringContaining(key)]);
        await rmdir(join(blobs.directory, key));
        await blobs.put(key, [JPEG]);
        expect(await sweepResults(store, blobs, { now: AN_HOUR_ON() })).toBe(1);
        expect(await keys()).toEqual([]);
      },
    );
  },
);
