import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { BlobStore } from '../delivery/index.ts';

/**
 * Answers 200 with a kept file, streamed from its blob store, or resolves `false` without
 * answering when it is not kept. The file is opened before the answer starts; a read that
 * fails once the headers are out cuts the connection, as the status can no longer say so.
 */
export async function sendBlobAnswer(
  res: ServerResponse,
  blobs: BlobStore,
  key: string,
  headers: OutgoingHttpHeaders,
): Promise<boolean> {
  const opened = await blobs.open(key);
  if (!opened) return false;
  res.writeHead(200, { ...headers, 'content-length': opened.size });
  // Node leaves the body out of a HEAD answer by itself; reading the file is then wasted.
  if (res.req.method === 'HEAD') {
    opened.stream.destroy();
    res.end();
    return true;
  }
  await pipeline(opened.stream, res).catch(() => {
    opened.stream.destroy();
    if (!res.destroyed) res.destroy();
  });
  return true;
}
