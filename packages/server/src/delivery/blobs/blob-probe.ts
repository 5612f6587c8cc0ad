import { randomBytes } from 'node:crypto';
import { blobKeyOf, type BlobStore } from './blob-store.ts';

const PROBE_BYTES = Buffer.from('mediahook blob store probe\n');

/**
 * Proves that `blobs` takes, gives back and removes a file now: writes a small probe under a
 * key of its own (`mediahook-probe.<nonce>.jpg`, a key no operation has), reads it back and
 * removes it. Throws what failed; a probe stays only when its removal fails, owned by no operation.
 *
 * @example
 * await probeBlobStore(await openBlobStore('s3://mediahook/results', { dataDir: 'data' }));
 */
export async function probeBlobStore(blobs: BlobStore, signal?: AbortSignal): Promise<void> {
  const key = blobKeyOf('mediahook-probe', 'image/jpeg', randomBytes(6).toString('hex'));
  await blobs.put(key, [PROBE_BYTES], signal);
  signal?.throwIfAborted();
  const read = await blobs.read(key, PROBE_BYTES.length);
  signal?.throwIfAborted();
  await blobs.remove(key);
  if (read === null || !read.equals(PROBE_BYTES)) {
    throw new Error(`a probe file written to ${blobs.location} did not read back the same`);
  }
}
