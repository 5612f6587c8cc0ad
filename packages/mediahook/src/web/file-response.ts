import { open } from 'node:fs/promises';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';

/**
 * Answers 200 with the file at `path`, or resolves `false` without answering when there is no
 * such file, so the caller answers 404 its own way. The file is opened before the answer
 * starts and sent from that open handle: a file removed in between (a retention sweep, another
 * process) is either sent whole or not found, never a crash on an unhandled stream error. A
 * read that fails once the headers are out cuts the connection: the status can no longer say so.
 *
 * @example
 * if (!(await sendFileAnswer(res, '/data/results/x.jpg', { 'content-type': 'image/jpeg' }))) {
 *   res.writeHead(404).end();
 * }
 */
export async function sendFileAnswer(
  res: ServerResponse,
  path: string,
  headers: OutgoingHttpHeaders,
): Promise<boolean> {
  const handle = await open(path, 'r').catch(() => null);
  if (!handle) return false;
  try {
    const info = await handle.stat();
    if (!info.isFile()) return false;
    res.writeHead(200, { ...headers, 'content-length': info.size });
    // Node leaves the body out of a HEAD answer by itself; reading the file is then wasted.
    if (res.req.method === 'HEAD') {
      res.end();
      return true;
    }
    await pipeline(handle.createReadStream({ autoClose: false }), res).catch(() => {
      if (!res.destroyed) res.destroy();
    });
    return true;
  } finally {
    await handle.close();
  }
}
