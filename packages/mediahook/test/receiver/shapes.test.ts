/**
 * Valid callbacks through every adapter: the four shapes and an MP4, sent by undici, fetch,
 * curl and Python requests; files stored where the handler is told; receipts; duplicates, sequential and concurrent.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { pythonWith } from '../python-interpreter.ts';
import { ADAPTERS, type Harness, startReceiver } from './adapters.ts';
import {
  type Answer,
  expectFile,
  jpegBytes,
  newId,
  SHAPES,
  send,
  sendWithFetch,
  sha256,
  storedFiles,
  tempDir,
  type Wire,
  wire,
} from './helpers.ts';

const run = promisify(execFile);

/** Checks what a handler got, what is on disk and what was recorded for one accepted callback. */
async function expectAccepted(harness: Harness, callback: Wire): Promise<void> {
  const receipt = await harness.receiver.store.get(callback.id);
  expect(receipt).toMatchObject({
    id_gen: callback.id,
    event: callback.event,
    family: callback.family,
    status: callback.status,
    time_gen: callback.timeGen,
  });
  if (callback.event === 'error') {
    expect(harness.successes).toHaveLength(0);
    expect(harness.errors).toHaveLength(1);
    expect(harness.errors[0]).toMatchObject({
      event: 'error',
      family: callback.family,
      id_gen: callback.id,
      status: callback.status,
      time_gen: callback.timeGen,
      message: callback.message,
    });
    expect(receipt?.message).toBe(callback.message);
    expect(await storedFiles(harness.out)).toEqual([]);
    return;
  }
  expect(harness.errors).toHaveLength(0);
  expect(harness.successes).toHaveLength(1);
  const got = harness.successes[0]!;
  const file = callback.file!;
  const extension = callback.mediaType === 'video/mp4' ? '.mp4' : '.jpg';
  expect(got).toMatchObject({
    event: 'success',
    family: callback.family,
    id_gen: callback.id,
    status: callback.status,
    time_gen: callback.timeGen,
  });
  expect(got.file).toMatchObject({
    part: callback.family === 'A' ? 'result_pv' : 'res_image',
    filename: `${callback.id}${extension}`,
    declaredType: callback.mediaType,
    mediaType: callback.mediaType,
    bytes: file.length,
    sha256: sha256(file),
    path: join(harness.out, `${callback.id}${extension}`),
  });
  await expectFile(got.file.path!, file);
  expect(await storedFiles(harness.out)).toEqual([`${callback.id}${extension}`]);
  expect(receipt).toMatchObject({
    file_path: got.file.path,
    media_type: callback.mediaType,
    bytes: file.length,
    sha256: sha256(file),
  });
}

function expectOk(answer: Answer, id: string, duplicate: boolean): void {
  expect(answer).toEqual({ status: 200, body: { received: true, id_gen: id, duplicate } });
}

/** Sends a success callback with `curl -F`, the way a person tries a receiver by hand. */
async function curlForm(url: string, fields: [string, string][]): Promise<Answer> {
  const args = [
    '--silent',
    '--show-error',
    '--noproxy',
    '*',
    '--max-time',
    '10',
    '--write-out',
    '\n%{http_code}',
  ];
  for (const [name, value] of fields) args.push('-F', `${name}=${value}`);
  const { stdout } = await run('/usr/bin/curl', [...args, url]);
  const newline = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(newline + 1)), body: JSON.parse(stdout.slice(0, newline)) };
}

/**
 * Python's `requests` as a client posts form fields first and files after, and gives a file passed
 * without a media type no `Content-Type` at all: the receiver decides by the bytes.
 */
const PYTHON_CLIENT = `
import json, sys, requests
url, jpeg_path, success_id, error_id = sys.argv[1:5]
answers = []
with open(jpeg_path, 'rb') as jpeg:
    r = requests.post(url, timeout=10,
        data={'status': 'success', 'id_gen': success_id, 'time_gen': '2026-11-24T10:00:00Z'},
        files={'result_pv': ('shot.jpg', jpeg)})
    answers.append({'status': r.status_code, 'body': r.json()})
r = requests.post(url, timeout=10, files=[('status', (None, 'error')), ('id_gen', (None, error_id)),
    ('time_gen', (None, '1700000000')), ('img_message', (None, 'prompt refus\u00e9'))])
answers.append({'status': r.status_code, 'body': r.json()})
print(json.dumps(answers))
`;

/** Whether python3 with \`requests\` is on this machine; said on the console when it is not. */
const python = pythonWith('requests');
const pythonRequests = python !== null;
if (!pythonRequests)
  console.warn('shapes: SKIPPING the Python requests client (python3 or requests missing)');

describe.each(ADAPTERS)('$name', (adapter) => {
  it.each(SHAPES)('accepts $label: 200, handler once, file and receipt', async (shape) => {
    const harness = await startReceiver(adapter);
    const callback = await wire(shape);
    expectOk(await send(harness.url, callback), callback.id, false);
    await expectAccepted(harness, callback);
  });

  it('accepts a callback sent with fetch', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire({ family: 'B', event: 'success' });
    expectOk(await sendWithFetch(harness.url, callback), callback.id, false);
    await expectAccepted(harness, callback);
  });

  it('accepts success and error callbacks sent with curl -F', async () => {
    const harness = await startReceiver(adapter);
    const dir = await tempDir();
    const jpeg = jpegBytes(5000);
    await writeFile(join(dir, 'shot.jpg'), jpeg);
    const id = newId('curl');
    const success = await curlForm(harness.url, [
      ['status', 'success'],
      ['id_gen', id],
      ['time_gen', '1700000000'],
      ['result_pv', `@${join(dir, 'shot.jpg')};type=image/jpeg`],
    ]);
    expectOk(success, id, false);
    expect(harness.successes[0]?.file).toMatchObject({
      filename: 'shot.jpg',
      bytes: 5000,
      sha256: sha256(jpeg),
    });
    await expectFile(join(harness.out, `${id}.jpg`), jpeg);

    const errorId = newId('curl');
    const failed = await curlForm(harness.url, [
      ['status', 'failed'],
      ['id_gen', errorId],
      ['time_gen', '2024-05-01T10:00:00Z'],
      ['img_message', 'prompt rejected'],
    ]);
    expectOk(failed, errorId, false);
    expect(harness.errors[0]).toMatchObject({ family: 'B', id_gen: errorId, message: 'prompt rejected' });
  });

  it.runIf(pythonRequests)('accepts callbacks sent with Python requests', async () => {
    const harness = await startReceiver(adapter);
    const dir = await tempDir();
    const jpeg = jpegBytes(7000);
    await writeFile(join(dir, 'shot.jpg'), jpeg);
    const [id, errorId] = [newId('py'), newId('py')];
    const { stdout } = await run(python!, [
      '-c',
      PYTHON_CLIENT,
      harness.url,
      join(dir, 'shot.jpg'),
      id,
      errorId,
    ]);
    const [success, failed] = JSON.parse(stdout) as Answer[];
    expectOk(success!, id, false);
    expect(harness.successes[0]?.file).toMatchObject({
      filename: 'shot.jpg',
      declaredType: null,
      mediaType: 'image/jpeg',
      bytes: 7000,
      sha256: sha256(jpeg),
    });
    await expectFile(join(harness.out, `${id}.jpg`), jpeg);
    expectOk(failed!, errorId, false);
    expect(harness.errors[0]).toMatchObject({ family: 'B', id_gen: errorId, message: 'prompt refusé' });
  });

  it('accepts a chunked upload of a 3 MiB file in small pieces', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire({ file: jpegBytes(3 * 1024 * 1024) });
    async function* pieces() {
      for (let at = 0; at < callback.body.length; at += 64 * 1024)
        yield callback.body.subarray(at, at + 64 * 1024);
    }
    // No Content-Length: undici sends Transfer-Encoding: chunked for a stream of unknown size.
    const response = await request(harness.url, {
      method: 'POST',
      body: Readable.from(pieces()),
      headers: callback.headers,
    });
    expect(response.statusCode).toBe(200);
    expect(await response.body.json()).toMatchObject({ duplicate: false });
    await expectAccepted(harness, callback);
  });

  it('stores a file for a path-like id_gen inside the output directory only', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire({ id: '../../escape/attempt' });
    expectOk(await send(harness.url, callback), callback.id, false);
    const path = harness.successes[0]?.file.path;
    expect(dirname(path!)).toBe(harness.out);
    await expectFile(path!, callback.file);
  });

  it('answers a repeated callback 200 duplicate, without calling the handler or storing again', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire({ family: 'A', event: 'success' });
    expectOk(await send(harness.url, callback), callback.id, false);
    expectOk(await send(harness.url, callback), callback.id, true);
    // A redelivery is the same operation even when its bytes differ (new boundary, new file).
    const again = await wire({ id: callback.id, file: jpegBytes(100) });
    expectOk(await send(harness.url, again), callback.id, true);
    expect(harness.successes).toHaveLength(1);
    expect(await storedFiles(harness.out)).toEqual([`${callback.id}.jpg`]);
    await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
    expect(harness.outcomes.map((outcome) => outcome.verdict)).toEqual([
      'accepted',
      'duplicate',
      'duplicate',
    ]);
    expect(await harness.receiver.store.list()).toHaveLength(1);
  });

  it('deduplicates an error callback too', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire({ family: 'B', event: 'error' });
    expectOk(await send(harness.url, callback), callback.id, false);
    expectOk(await send(harness.url, callback), callback.id, true);
    expect(harness.errors).toHaveLength(1);
  });

  it('stores and handles five concurrent copies of one callback once', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire({ family: 'A', event: 'success', mediaType: 'video/mp4' });
    const answers = await Promise.all(Array.from({ length: 5 }, () => send(harness.url, callback)));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.filter((answer) => answer.body.duplicate === false)).toHaveLength(1);
    expect(harness.successes).toHaveLength(1);
    expect(await storedFiles(harness.out)).toEqual([`${callback.id}.mp4`]);
    await expectFile(join(harness.out, `${callback.id}.mp4`), callback.file);
  });

  it('keeps different callbacks apart when they arrive together', async () => {
    const harness = await startReceiver(adapter);
    const callbacks = await Promise.all(SHAPES.map((shape) => wire(shape)));
    const answers = await Promise.all(callbacks.map((callback) => send(harness.url, callback)));
    for (const [i, answer] of answers.entries()) expectOk(answer, callbacks[i]!.id, false);
    expect(harness.successes).toHaveLength(3);
    expect(harness.errors).toHaveLength(2);
    expect(await storedFiles(harness.out)).toHaveLength(3);
  });
});
