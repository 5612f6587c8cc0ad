/**
 * `sendFileAnswer` over real HTTP: the whole file with its length, HEAD without the body, no
 * answer for what is not a file, and a file removed while it is being sent still sent whole.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendFileAnswer } from '../../src/web/file-response.ts';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

describe('sendFileAnswer', () => {
  let directory: string;
  let server: Server;
  let port: number;
  /** Runs once the first body bytes of an answer are out, before the rest is read. */
  let onFirstBytes: (() => Promise<void>) | null = null;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'mediahook-file-response-'));
    server = createServer((req, res) => {
      const path = join(directory, decodeURIComponent(req.url!.slice(1)));
      void sendFileAnswer(res, path, { 'content-type': 'image/jpeg' }).then((sent) => {
        if (!sent) res.writeHead(404).end('none');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(directory, { recursive: true, force: true });
  });

  function get(name: string, method = 'GET'): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, method, path: `/${encodeURIComponent(name)}` },
        (res) => {
          const chunks: Buffer[] = [];
          let first = true;
          res.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            if (first && onFirstBytes) {
              first = false;
              res.pause();
              void onFirstBytes().then(() => res.resume(), reject);
            }
          });
          res.on('end', () =>
            resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  it('sends the whole file with its length and the given headers', async () => {
    const bytes = randomBytes(300_000);
    await writeFile(join(directory, 'a.jpg'), bytes);
    const answer = await get('a.jpg');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('image/jpeg');
    expect(answer.headers['content-length']).toBe(String(bytes.length));
    expect(answer.body.equals(bytes)).toBe(true);
  });

  it('answers HEAD with the headers and no body', async () => {
    await writeFile(join(directory, 'h.jpg'), randomBytes(1000));
    const answer = await get('h.jpg', 'HEAD');
    expect([answer.status, answer.headers['content-length'], answer.body.length]).toEqual([200, '1000', 0]);
  });

  it('leaves the answer to the caller for a missing file or a directory', async () => {
    await mkdir(join(directory, 'dir.jpg'));
    expect((await get('missing.jpg')).status).toBe(404);
    expect((await get('dir.jpg')).status).toBe(404);
  });

  it('sends a file removed while its answer is on the way whole', async () => {
    const bytes = randomBytes(8 * 1024 * 1024);
    await writeFile(join(directory, 'gone.jpg'), bytes);
    onFirstBytes = () => unlink(join(directory, 'gone.jpg'));
    try {
      const answer = await get('gone.jpg');
      expect(answer.status).toBe(200);
      expect(answer.body.equals(bytes)).toBe(true);
    } finally {
      onFirstBytes = null;
    }
    expect((await get('gone.jpg')).status).toBe(404);
  });
});
