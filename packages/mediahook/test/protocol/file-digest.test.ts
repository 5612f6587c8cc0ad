/**
 * FileDigest: the SHA-256 of a result file, in place for small files and on a thread for large
 * ones. Whatever the path, the digest is the file's; the caller may reuse its buffers; the
 * thread's backlog makes the feeder wait; and a process awaiting a digest lives to get it.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FileDigest, type FileDigestOptions } from '../../src/protocol/file-digest.ts';

const MiB = 1024 * 1024;

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Feeds `bytes` in chunks of random sizes up to `maxChunk`, waiting when asked to. */
async function digestOf(
  bytes: Buffer,
  maxChunk: number,
  seed: number,
  options?: FileDigestOptions,
): Promise<string> {
  const digest = new FileDigest(options);
  let state = seed;
  for (let at = 0; at < bytes.length;) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const size = 1 + (state % maxChunk);
    digest.update(bytes.subarray(at, at + size));
    at += size;
    await digest.backlog();
  }
  return digest.digest();
}

describe('FileDigest', () => {
  it.each([0, 1, 65_536, MiB - 1, MiB, MiB + 1, 3 * MiB + 17, 20 * MiB])(
    'gives the SHA-256 of %i bytes, in place or on the thread, however they are cut',
    async (size) => {
      const bytes = randomBytes(size);
      for (const [maxChunk, seed] of [
        [64 * 1024, 1],
        [3 * MiB, 2],
        [1_000, 3],
      ] as const) {
        if (size > 4 * MiB && maxChunk === 1_000) continue; // the same path, only slower
        expect(await digestOf(bytes, maxChunk, seed)).toBe(sha256(bytes));
      }
    },
  );

  it.each([0, 65_536, MiB, MiB + 1, 3 * MiB + 17])(
    'gives the same SHA-256 of %i bytes when told the most the file can have, or told wrongly',
    async (size) => {
      const bytes = randomBytes(size);
      // The body's length bounds the file: in place up to 1 MiB, on the thread beyond. A hint
      // smaller than the file (a caller's mistake) or one that is no size still hashes it right.
      for (const maxBytes of [size, size + 500, 100, MiB + 100, Number.NaN, -1]) {
        expect(await digestOf(bytes, 64 * 1024, 4, { maxBytes })).toBe(sha256(bytes));
      }
    },
  );

  it('keeps nothing it is given: the caller may reuse its buffer at once', async () => {
    for (const [size, maxBytes] of [
      [4_096, undefined],
      [2 * MiB, undefined],
      [4_096, 5 * 4_096],
      [2 * MiB, 10 * MiB],
    ] as const) {
      const expected = createHash('sha256');
      const digest = new FileDigest({ maxBytes });
      const buffer = Buffer.alloc(size);
      for (let i = 0; i < 5; i++) {
        buffer.fill(i + 1);
        expected.update(buffer);
        digest.update(buffer);
      }
      buffer.fill(0);
      expect(await digest.digest()).toBe(expected.digest('hex'));
    }
  });

  it('asks the feeder to wait while the thread is behind, then lets it go on', async () => {
    const bytes = randomBytes(20 * MiB);
    const digest = new FileDigest();
    // Fed at once, nothing hashed yet: far more than the allowed backlog is waiting.
    digest.update(bytes);
    const wait = digest.backlog();
    expect(wait).toBeInstanceOf(Promise);
    await wait;
    expect(await digest.digest()).toBe(sha256(bytes));
  });

  it('drops an abandoned file: its digest is refused, and others go on', async () => {
    for (const maxBytes of [undefined, 100 * MiB, 4 * MiB, MiB]) {
      const abandoned = new FileDigest({ maxBytes });
      abandoned.update(randomBytes(3 * MiB));
      abandoned.abort();
      await expect(abandoned.digest()).rejects.toThrow(/abandoned/);
      expect(() => abandoned.update(Buffer.from('more'))).toThrow(/abandoned/);
    }
    const bytes = randomBytes(2 * MiB);
    expect(await digestOf(bytes, MiB, 9)).toBe(sha256(bytes));
  });

  it('keeps a process alive while it awaits a digest from the thread', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mediahook-digest-'));
    try {
      const script = join(dir, 'digest.mts');
      const module = fileURLToPath(new URL('../../src/protocol/file-digest.ts', import.meta.url));
      // Nothing but the hashing keeps this script's event loop busy. The first digest starts
      // the thread; the second runs on a thread that is up and idle in between.
      writeFileSync(
        script,
        `import { FileDigest } from ${JSON.stringify(module)};
const first = new FileDigest();
first.update(Buffer.alloc(2 * 1024 * 1024, 1));
await first.digest();
await new Promise((resolve) => setTimeout(resolve, 200));
const digest = new FileDigest();
digest.update(Buffer.alloc(16 * 1024 * 1024, 7));
console.log(await digest.digest());
`,
      );
      const out = execFileSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8' });
      expect(out.trim()).toBe(sha256(Buffer.alloc(16 * MiB, 7)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
