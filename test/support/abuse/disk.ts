/**
 * A disk that fails under `mediahook listen`: its output directory replaced by a file while it
 * runs (every new file fails to open), and a file size limit (`ulimit -f`) that makes writes
 * fail midway with EFBIG. Each failing callback must be answered `storage_failed`, leave no
 * file and no `.part` behind, and be accepted once the disk is back.
 */
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeCallback } from '../../../packages/mediahook/src/protocol/index.ts';
import { errorCode, postHead, rawRequest } from './raw-http.ts';
import { BOOKKEEPING, type ListenProcess, startListen } from './listen-process.ts';

export interface DiskFigures {
  answers: Record<string, string>;
  failures: string[];
}

async function send(listen: ListenProcess, id: string, fileBytes: number | null): Promise<string> {
  const time_gen = new Date().toISOString();
  const encoded = await encodeCallback(
    fileBytes === null
      ? { family: 'A', event: 'error', status: 'error', id_gen: id, time_gen, message: 'failed' }
      : {
          family: 'A',
          event: 'success',
          status: 'success',
          id_gen: id,
          time_gen,
          file: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(fileBytes - 4, 7)]),
          mediaType: 'image/jpeg',
        },
  );
  const chunks: Buffer[] = [];
  for await (const chunk of encoded.body()) chunks.push(chunk);
  const answer = await rawRequest(listen.port, postHead(encoded.contentType, encoded.contentLength), chunks);
  return answer.status === 200 ? '200' : `${answer.status} ${errorCode(answer)}`;
}

export async function runDiskFaults(root: string): Promise<DiskFigures> {
  const answers: Record<string, string> = {};
  const failures: string[] = [];
  const expect = (label: string, got: string, want: string) => {
    answers[label] = got;
    if (got !== want) failures.push(`${label}: expected ${want}, got ${got}`);
  };
  const leftovers = async (dir: string, allowed: number, label: string) => {
    const names = (await readdir(dir)).filter((n) => !BOOKKEEPING.has(n));
    if (names.some((n) => n.endsWith('.part')) || names.length !== allowed) {
      failures.push(`${label}: the output directory holds ${names.join(', ') || 'nothing'}`);
    }
  };

  // 1. The output directory vanishes under a running receiver (a file takes its place).
  const out = join(root, 'vanishing', 'out');
  await mkdir(out, { recursive: true });
  let listen = await startListen(out);
  try {
    expect('before: a success callback', await send(listen, 'disk-before', 10_000), '200');
    await rename(out, `${out}.moved`);
    await writeFile(out, 'not a directory');
    expect(
      'directory gone: a success callback',
      await send(listen, 'disk-gone', 10_000),
      '500 storage_failed',
    );
    expect(
      'directory gone: an error callback (its receipt has nowhere to go either)',
      await send(listen, 'disk-gone-error', null),
      '500 storage_failed',
    );
    if (!(await listen.alive())) failures.push('listen died when its directory vanished');
    await rm(out);
    await rename(`${out}.moved`, out);
    await leftovers(out, 1, 'directory gone');
    expect('directory back: the same callback again', await send(listen, 'disk-gone', 10_000), '200');
    expect('directory back: the error callback again', await send(listen, 'disk-gone-error', null), '200');
    await leftovers(out, 2, 'directory back');
  } finally {
    await listen.stop();
  }

  // 2. Writes fail midway: a 1 MiB file size limit, and a 3 MiB result.
  const limited = join(root, 'limited');
  await mkdir(limited);
  listen = await startListen(limited, { wrap: 'ulimit -f 1024' });
  try {
    expect(
      'file size limit: a 3 MiB result',
      await send(listen, 'disk-big', 3 * 1024 * 1024),
      '500 storage_failed',
    );
    if (!(await listen.alive())) failures.push('listen died when a write failed');
    await leftovers(limited, 0, 'file size limit');
    expect('file size limit: a 100 KiB result', await send(listen, 'disk-small', 100_000), '200');
    await leftovers(limited, 1, 'file size limit, after a small one');
    const rejected = listen.records.filter((r) => r.event === 'rejected').map((r) => r.code);
    if (rejected.join() !== 'storage_failed')
      failures.push(`listen recorded ${rejected.join() || 'no refusal'}`);
  } finally {
    await listen.stop();
  }
  return { answers, failures };
}
