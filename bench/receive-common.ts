/**
 * What the receive suite's servers share (receive-servers.ts, receive-peers.ts): the counters a
 * server reports, the DiskSink every storing server writes through, and small HTTP helpers.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Server as TcpServer } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { DiskSink, fileNameFor } from '../packages/mediahook/src/receiver/index.ts';

/** Counted since the last `clean` of the out directory. */
export const counts = { ok: 0, failed: 0, stored: 0, storedBytes: 0, receivedBytes: 0 };

/**
 * Work still going on: responses not closed (`active`), and handlers or sinks not done (`busy`).
 * A response can close (the load generator hung up when its time was over) while its file is
 * still being committed or removed; the out directory is counted only once all of it is over.
 */
export const work = { active: 0, busy: 0 };

const EXTENSIONS: Record<string, string> = { 'image/jpeg': '.jpg', 'video/mp4': '.mp4' };

/** The project's DiskSink, counted as busy from its creation until it is committed or aborted. */
export class CountedSink extends DiskSink {
  #settled = false;

  constructor(out: string) {
    super(out);
    work.busy++;
  }

  #done(): void {
    if (this.#settled) return;
    this.#settled = true;
    work.busy--;
  }

  override async commit(finalPath: string): Promise<void> {
    try {
      await super.commit(finalPath);
      counts.stored++;
      counts.storedBytes += this.bytes;
    } finally {
      this.#done();
    }
  }

  override async abort(): Promise<void> {
    try {
      await super.abort();
    } finally {
      this.#done();
    }
  }
}

/** Counts every node:http request the same way, whichever framework answers it. */
export function track(server: Server): void {
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    work.active++;
    res.once('close', () => {
      work.active--;
      if (res.statusCode === 200 && res.writableFinished) counts.ok++;
      else counts.failed++;
    });
  });
}

/**
 * Streams a file part into a DiskSink, pausing the source while the sink asks to wait: the
 * backpressure the project's decoder applies to the same sink.
 */
export function pipeToSink(stream: Readable, sink: DiskSink): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const fail = (error: unknown) => {
      stream.destroy();
      reject(error instanceof Error ? error : new Error(String(error)));
    };
    stream.on('data', (chunk: Buffer) => {
      let pending: void | Promise<void>;
      try {
        pending = sink.write(chunk);
      } catch (error) {
        fail(error);
        return;
      }
      if (pending) {
        stream.pause();
        pending.then(() => stream.resume(), fail);
      }
    });
    stream.once('end', resolve);
    stream.once('error', fail);
    stream.once('close', () => {
      if (!stream.readableEnded) fail(new Error('the file stream closed before its end'));
    });
  });
}

/** Closes (fsync) and renames a peer's file to `<id_gen>.<ext>`, as the receiver names it. */
export async function commit(
  sink: DiskSink,
  out: string,
  idGen: unknown,
  mediaType: string,
): Promise<string> {
  if (typeof idGen !== 'string' || idGen === '') throw new Error('no id_gen before the file');
  await sink.close();
  await sink.commit(join(out, `${fileNameFor(idGen)}${EXTENSIONS[mediaType] ?? '.bin'}`));
  return idGen;
}

export const answer = (idGen: string) => JSON.stringify({ received: true, id_gen: idGen });

export function sendJson(res: ServerResponse, status: number, body: string): void {
  const headers: Record<string, string | number> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  };
  // After a failure the body may be partly unread: the connection cannot be reused.
  if (status !== 200) headers.connection = 'close';
  res.writeHead(status, headers);
  res.end(body);
}

/** Listens on a free loopback port; resolves that port. */
export function listen(server: TcpServer): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}
