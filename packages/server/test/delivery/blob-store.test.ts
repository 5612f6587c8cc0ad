/**
 * The blob store of result files: keys, reads sized by what the store recorded (and what
 * happens when the file no longer has that size), and removal.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { blobKeyOf, DirectoryBlobStore } from '../../src/delivery/index.ts';

let dir: string;
let blobs: DirectoryBlobStore;

afterEach(() => rmSync(dir, { recursive: true, force: true }));

// Every read case both ways: small files read at once (the default), and every read through
// the thread pool (as for a directory on a network file system).
describe.each([
  { reads: 'blocking up to 1 MiB', options: {} },
  { reads: 'all through the thread pool', options: { blockingReadMaxBytes: 0 } },
])('DirectoryBlobStore, reads $reads', ({ options }) => {
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mediahook-blobs-'));
    blobs = new DirectoryBlobStore(join(dir, 'results'), options);
  });

  it('reads a file whole, sized or not, and says null once it is gone', async () => {
    const bytes = randomBytes(70_000);
    const key = blobKeyOf('op-1', 'image/jpeg');
    expect(key).toBe('op-1.jpg');
    await blobs.put(key, [bytes]);
    expect(await blobs.read(key, bytes.length)).toEqual(bytes);
    expect(await blobs.read(key)).toEqual(bytes);
    await blobs.remove(key);
    expect(await blobs.read(key, bytes.length)).toBeNull();
    expect(await blobs.read(key)).toBeNull();
    await blobs.remove(key); // removing twice is no error
  });

  it('reads what the file holds when it no longer has the size recorded', async () => {
    const key = blobKeyOf('op-2', 'image/jpeg');
    await blobs.put(key, [randomBytes(1_000)]);
    const grown = randomBytes(300_000);
    writeFileSync(blobs.pathOf(key), grown);
    expect(await blobs.read(key, 1_000)).toEqual(grown);
    truncateSync(blobs.pathOf(key), 10);
    expect(await blobs.read(key, 1_000)).toEqual(grown.subarray(0, 10));
    truncateSync(blobs.pathOf(key), 0);
    expect((await blobs.read(key, 1_000))?.length).toBe(0);
  });

  it('reads a file that grew past the blocking limit through the thread pool, whole', async () => {
    const small = new DirectoryBlobStore(blobs.directory, { blockingReadMaxBytes: 4_096 });
    const key = blobKeyOf('op-3', 'image/jpeg');
    await small.put(key, [randomBytes(1_000)]);
    const grown = randomBytes(50_000);
    writeFileSync(small.pathOf(key), grown);
    expect(await small.read(key, 1_000)).toEqual(grown);
  });

  it('takes only keys it made, never a path', async () => {
    expect(() => blobs.pathOf('../etc/passwd')).toThrow(TypeError);
    expect(() => blobKeyOf('a/b', 'image/jpeg')).toThrow(TypeError);
    await expect(blobs.read('x/../y.jpg')).rejects.toThrow(TypeError);
    expect(blobKeyOf('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 'video/mp4')).toBe(
      '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.mp4',
    );
  });
});

describe('DirectoryBlobStore file modes', () => {
  it('keeps results 0600 in a 0700 directory, however they were written', async () => {
    dir = mkdtempSync(join(tmpdir(), 'mediahook-blobs-'));
    const before = process.umask(0o022);
    try {
      blobs = new DirectoryBlobStore(join(dir, 'results'));
      const fromBytes = blobKeyOf('op-1', 'image/jpeg');
      await blobs.put(fromBytes, [randomBytes(100)]);
      // As a generator leaves it: written with the umask's mode.
      const made = join(dir, 'made.mp4');
      writeFileSync(made, randomBytes(100));
      const fromFile = blobKeyOf('op-2', 'video/mp4');
      await blobs.putFile(fromFile, made);
      const modeOf = (path: string) => statSync(path).mode & 0o777;
      expect(modeOf(join(dir, 'results'))).toBe(0o700);
      expect([modeOf(blobs.pathOf(fromBytes)), modeOf(blobs.pathOf(fromFile))]).toEqual([0o600, 0o600]);
    } finally {
      process.umask(before);
    }
  });
});
