/**
 * DiskSink on a real directory: what is committed is there whole under its final name, nothing
 * else is left behind, and a failure surfaces instead of a short file.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeStaleTemporaryFiles } from '../../src/receiver/disk-sink.ts';
import { createReceiver, DiskSink, MemoryReceiptStore } from '../../src/receiver/index.ts';
import { eventually } from './helpers.ts';

const MiB = 1024 * 1024;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mediahook-sink-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `bytes` in `chunk`-sized pieces, waiting whenever the sink asks to. */
async function writeAll(sink: DiskSink, bytes: Buffer, chunk: number): Promise<void> {
  for (let at = 0; at < bytes.length; at += chunk) await sink.write(bytes.subarray(at, at + chunk));
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('DiskSink', () => {
  it.each([
    ['empty', 0, 1],
    ['small, in one piece', 66_123, 66_123],
    ['small, in odd pieces', 66_123, 1_000],
    // Past the 2 MiB batches and the 16 MiB between background flushes to the disk.
    ['large', 70 * MiB + 3, 64 * 1024],
  ])('stores a %s file whole under its final name and nothing else', async (_label, size, chunk) => {
    const bytes = randomBytes(size);
    const sink = new DiskSink(dir);
    await writeAll(sink, bytes, chunk);
    expect(sink.bytes).toBe(size);
    await sink.close();
    await sink.commit(join(dir, 'op-1.jpg'));
    expect(readdirSync(dir)).toEqual(['op-1.jpg']);
    expect(sha256(readFileSync(join(dir, 'op-1.jpg')))).toBe(sha256(bytes));
  });

  it('writes to a hidden temporary file of its own, never under a name it was given', () => {
    const names = Array.from({ length: 1_000 }, () => new DiskSink(dir).tempPath);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^.+\/\.incoming-[\w-]+\.part$/);
  });

  it('creates missing directories, for the temporary file and for the final one', async () => {
    const sink = new DiskSink(join(dir, 'in', 'coming'));
    await writeAll(sink, Buffer.from('bytes'), 5);
    await sink.close();
    await sink.commit(join(dir, 'out', 'op-2.mp4'));
    expect(readFileSync(join(dir, 'out', 'op-2.mp4'), 'utf8')).toBe('bytes');
    expect(readdirSync(join(dir, 'in', 'coming'))).toEqual([]);
  });

  it('leaves nothing behind when aborted before or after its commit, or midway through a large file', async () => {
    const early = new DiskSink(dir);
    await writeAll(early, randomBytes(40 * MiB), MiB);
    await early.abort();
    const committed = new DiskSink(dir);
    await writeAll(committed, Buffer.from('x'), 1);
    await committed.close();
    await committed.commit(join(dir, 'op-3.jpg'));
    await committed.abort();
    await committed.abort();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses a commit before the close', async () => {
    const sink = new DiskSink(dir);
    await writeAll(sink, Buffer.from('x'), 1);
    await expect(sink.commit(join(dir, 'op-4.jpg'))).rejects.toThrow(/after it is closed/);
    await sink.abort();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('fails its close, not silently, when the file cannot be written, and its abort still settles', async () => {
    const notADirectory = join(dir, 'file');
    writeFileSync(notADirectory, '');
    const sink = new DiskSink(notADirectory);
    await writeAll(sink, Buffer.from('bytes'), 5);
    await expect(sink.close()).rejects.toMatchObject({ code: 'ENOTDIR' });
    await sink.abort();
    expect(readdirSync(dir)).toEqual(['file']);
  });

  it('commits many files into one directory at once, each durable and whole', async () => {
    const files = Array.from({ length: 24 }, (_, i) => randomBytes(1_000 + i));
    await Promise.all(
      files.map(async (bytes, i) => {
        const sink = new DiskSink(dir);
        await writeAll(sink, bytes, 333);
        await sink.close();
        await sink.commit(join(dir, `op-${i}.jpg`));
      }),
    );
    expect(readdirSync(dir).sort()).toEqual(files.map((_, i) => `op-${i}.jpg`).sort());
    files.forEach((bytes, i) => expect(readFileSync(join(dir, `op-${i}.jpg`))).toEqual(bytes));
  });

  it('commits into more directories than it keeps sync states for, twice over', async () => {
    const directories = Array.from({ length: 40 }, (_, i) => join(dir, `d${i}`));
    for (const round of [0, 1]) {
      await Promise.all(
        directories.flatMap((directory) =>
          [0, 1, 2].map(async (k) => {
            const sink = new DiskSink(directory);
            await writeAll(sink, Buffer.from(`${directory} ${round} ${k}`), 7);
            await sink.close();
            await sink.commit(join(directory, `op-${round}-${k}.jpg`));
          }),
        ),
      );
    }
    for (const directory of directories) {
      expect(readdirSync(directory).sort()).toEqual([
        'op-0-0.jpg',
        'op-0-1.jpg',
        'op-0-2.jpg',
        'op-1-0.jpg',
        'op-1-1.jpg',
        'op-1-2.jpg',
      ]);
      expect(readFileSync(join(directory, 'op-1-2.jpg'), 'utf8')).toBe(`${directory} 1 2`);
    }
  });
});

describe('temporary files left by a receiver killed mid-upload', () => {
  it('are removed when a receiver starts on the directory, unless written lately', async () => {
    const stale = join(dir, '.incoming-killed-3.part');
    const live = join(dir, '.incoming-other-process-1.part');
    const kept = join(dir, 'op-1.jpg');
    for (const path of [stale, live, kept]) writeFileSync(path, 'x');
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    utimesSync(stale, twoHoursAgo, twoHoursAgo);
    utimesSync(kept, twoHoursAgo, twoHoursAgo);
    const receiver = createReceiver({ out: dir, store: new MemoryReceiptStore() });
    try {
      await eventually(() => !existsSync(stale));
      expect(readdirSync(dir).sort()).toEqual(['.incoming-other-process-1.part', 'op-1.jpg']);
    } finally {
      await receiver.close();
    }
  });

  it('are counted as they go, and a directory not made yet is no error', async () => {
    const stale = join(dir, '.incoming-killed-4.part');
    writeFileSync(stale, 'x');
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    utimesSync(stale, old, old);
    expect(await removeStaleTemporaryFiles(dir, 60 * 60 * 1000)).toBe(1);
    expect(await removeStaleTemporaryFiles(join(dir, 'missing'), 0)).toBe(0);
  });
});
