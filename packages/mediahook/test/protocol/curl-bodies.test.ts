/**
 * Bodies written by a real client: curl's `-F` builds the multipart request, a loopback server
 * records its bytes, and the decoder must read them (fed every way) as the callback curl sent.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegBytes, mp4Bytes } from './bodies.ts';
import { decodeEveryWay, expectedFile } from './decode-harness.ts';

const run = promisify(execFile);
const CURL = '/usr/bin/curl';

interface Captured {
  contentType: string;
  contentLength: number;
  body: Buffer;
}

let server: Server;
let url: string;
let directory: string;
const captured: Captured[] = [];
const JPEG = jpegBytes(4000, 41, '------------------------');
const MP4 = mp4Bytes(6000, 42, '------------------------');

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'mediahook-curl-'));
  await writeFile(join(directory, 'result.jpg'), JPEG);
  await writeFile(join(directory, 'clip.mp4'), MP4);
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      captured.push({
        contentType: req.headers['content-type'] ?? '',
        contentLength: Number(req.headers['content-length']),
        body: Buffer.concat(chunks),
      });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rm(directory, { recursive: true, force: true });
});

/** Runs curl with form arguments against the loopback server and returns what it sent. */
async function curlPost(form: string[]): Promise<Captured> {
  const before = captured.length;
  // No proxy: the request must go straight to the loopback server whatever the environment says.
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: directory };
  await run(CURL, ['-s', '-S', '--noproxy', '*', '--max-time', '10', ...form, url], { env, cwd: directory });
  expect(captured.length).toBe(before + 1);
  const request = captured[before]!;
  expect(request.contentType).toMatch(/^multipart\/form-data; boundary=/);
  expect(request.contentLength).toBe(request.body.length);
  return request;
}

const ID = '0192f0e4-7c3a-7b1e-9d2f-5a6b7c8d9e0f';
const TIME = '2026-11-22T10:00:00.123Z';
const common = ['-F', 'status=success', '-F', `id_gen=${ID}`, '-F', `time_gen=${TIME}`];
const fields = { status: 'success', id_gen: ID, time_gen: TIME };
// Texts with curl's own special characters (;, ", @, <) go through --form-string, taken literally.
const MESSAGE = 'the model refused: "unsafe prompt"; see <docs> @ line 2\nünïcödé ✓';

describe('bodies made by curl -F', () => {
  it.each([
    {
      shape: 'A success, JPEG',
      form: [...common, '-F', 'result_pv=@result.jpg;type=image/jpeg'],
      expected: {
        event: 'success',
        family: 'A',
        ...fields,
        file: expectedFile('result_pv', JPEG, 'image/jpeg', 'image/jpeg', 'result.jpg'),
      },
    },
    {
      shape: 'A success, MP4',
      form: [...common, '-F', 'result_pv=@clip.mp4;type=video/mp4'],
      expected: {
        event: 'success',
        family: 'A',
        ...fields,
        file: expectedFile('result_pv', MP4, 'video/mp4', 'video/mp4', 'clip.mp4'),
      },
    },
    {
      shape: 'A success, MP4 with the type curl guesses',
      form: [...common, '-F', 'result_pv=@clip.mp4'],
      expected: {
        event: 'success',
        family: 'A',
        ...fields,
        file: expectedFile('result_pv', MP4, 'video/mp4', 'application/octet-stream', 'clip.mp4'),
      },
    },
    {
      shape: 'A error',
      form: [...common, '--form-string', `message=${MESSAGE}`],
      expected: { event: 'error', family: 'A', ...fields, message: MESSAGE },
    },
    {
      shape: 'B success, JPEG with a UTF-8 filename',
      form: [...common, '-F', 'res_image=@result.jpg;type=image/jpeg;filename=résultat.jpg'],
      expected: {
        event: 'success',
        family: 'B',
        ...fields,
        file: expectedFile('res_image', JPEG, 'image/jpeg', 'image/jpeg', 'résultat.jpg'),
      },
    },
    {
      shape: 'B error',
      form: [...common, '--form-string', `img_message=${MESSAGE}`],
      expected: { event: 'error', family: 'B', ...fields, message: MESSAGE },
    },
    {
      shape: 'B error, parts in another order',
      form: [
        '--form-string',
        'img_message=late',
        '-F',
        `time_gen=${TIME}`,
        '-F',
        `id_gen=${ID}`,
        '-F',
        'status=success',
      ],
      expected: { event: 'error', family: 'B', ...fields, message: 'late' },
    },
  ])('$shape', async ({ form, expected }) => {
    const request = await curlPost(form);
    const outcome = await decodeEveryWay(request.contentType, request.body);
    expect(outcome).toEqual({ ok: true, callback: expected });
  });

  it.each([
    {
      problem: 'an extra part',
      form: [...common, '--form-string', 'message=m', '-F', 'extra=1'],
      code: 'unexpected_part',
    },
    {
      problem: 'B with an MP4',
      form: [...common, '-F', 'res_image=@clip.mp4;type=video/mp4'],
      code: 'media_mismatch',
    },
    {
      problem: 'the result sent as a text',
      form: [...common, '-F', 'result_pv=<result.jpg'],
      code: 'expected_file',
    },
    { problem: 'no result and no error part', form: common, code: 'missing_part' },
  ])('rejects $problem: $code', async ({ form, code }) => {
    const request = await curlPost(form);
    expect(await decodeEveryWay(request.contentType, request.body)).toEqual({ ok: false, code });
  });
});
