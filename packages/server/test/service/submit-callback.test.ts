/**
 * `POST /v1/callbacks`: outcomes made elsewhere, handed in as multipart by real clients (undici's
 * FormData, curl -F), delivered like any other callback, idempotent by id_gen, and every bad
 * input refused with its stable code and nothing kept.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FormData, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { submitCallback } from '../../src/index.ts';
import {
  type Answer,
  type RunningService,
  SECRET,
  startService,
  startTempReceiving,
  type TempReceiving,
  waitForCallback,
} from './service-harness.ts';

const MAX_FILE_BYTES = 256 * 1024;

function jpeg(size = 4_000): Buffer {
  const bytes = randomBytes(size);
  bytes.set([0xff, 0xd8, 0xff, 0xe0], 0);
  bytes.set([0xff, 0xd9], size - 2);
  return bytes;
}

function mp4(size = 4_000): Buffer {
  const bytes = randomBytes(size);
  bytes.set([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d], 0);
  return bytes;
}

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(500)]);
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

type Part = [name: string, value: string] | [name: string, file: Buffer, filename: string];

/** A multipart body as a browser or curl sends it: undici's own FormData encoder. */
function form(parts: Part[]): FormData {
  const body = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === 'string') body.append(name, value);
    else body.append(name, new Blob([value]), filename);
  }
  return body;
}

describe('POST /v1/callbacks', () => {
  let run: RunningService;
  let receiving: TempReceiving;
  let hook: string;

  const submit = async (parts: Part[] | FormData | string, headers: Record<string, string> = {}) => {
    const response = await request(`${run.url}/v1/callbacks`, {
      method: 'POST',
      headers,
      body: Array.isArray(parts) ? form(parts) : parts,
    });
    const text = await response.body.text();
    return { status: response.statusCode, body: JSON.parse(text) } as Pick<Answer, 'status' | 'body'>;
  };
  const keptKeys = async () => {
    const keys: string[] = [];
    for await (const key of run.service.blobs.keys()) keys.push(key);
    return keys;
  };
  const received = (id: string) =>
    receiving.outcomes.filter((o) => o.verdict === 'accepted' && o.callback?.id_gen === id);

  beforeAll(async () => {
    receiving = await startTempReceiving(SECRET);
    hook = `${receiving.url}/hook`;
    run = await startService({ maxSubmittedFileBytes: MAX_FILE_BYTES });
  });
  afterAll(async () => {
    await run?.stop();
    await receiving?.close();
  });

  it('delivers a JPEG handed in with FormData, with its status and time_gen as given', async () => {
    const file = jpeg();
    const time = '2026-11-27T10:00:00.123+02:00';
    const answer = await submit([
      ['webhook_url', hook],
      ['family', 'A'],
      ['status', 'rendered'],
      ['id_gen', 'job-0001'],
      ['time_gen', time],
      ['result', file, 'frame.jpg'],
    ]);
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ id_gen: 'job-0001', kind: 'external', state: 'succeeded' });
    await receiving.waitFor(['job-0001']);
    const [outcome] = received('job-0001');
    expect(outcome?.callback).toMatchObject({ event: 'success', status: 'rendered', time_gen: time });
    expect(outcome?.callback?.event === 'success' && outcome.callback.file.sha256).toBe(sha256(file));
    const result = await request(`${run.url}/v1/operations/job-0001/result`);
    expect(Buffer.from(await result.body.arrayBuffer()).equals(file)).toBe(true);
    const listed = await run.get('/v1/operations?limit=5');
    expect(listed.body.operations.map((o: { kind: string }) => o.kind)).toContain('external');
  });

  it('delivers an error message in family B, and an MP4 in family A', async () => {
    const failed = await submit([
      ['webhook_url', hook],
      ['family', 'B'],
      ['id_gen', 'job-0002'],
      ['message', 'the renderer ran out of memory'],
    ]);
    expect(failed).toMatchObject({ status: 202, body: { kind: 'external', state: 'failed' } });
    const video = mp4();
    const made = await submit([
      ['webhook_url', hook],
      ['family', 'A'],
      ['id_gen', 'job-0003'],
      ['result', video, 'clip.mp4'],
    ]);
    expect(made).toMatchObject({ status: 202, body: { state: 'succeeded' } });
    await receiving.waitFor(['job-0002', 'job-0003']);
    expect(received('job-0002')[0]?.callback).toMatchObject({
      event: 'error',
      status: 'error',
      message: 'the renderer ran out of memory',
    });
    const clip = received('job-0003')[0]?.callback;
    expect(clip?.event === 'success' && [clip.file.mediaType, clip.file.sha256]).toEqual([
      'video/mp4',
      sha256(video),
    ]);
  });

  it('answers the same hand-in again with 200, and one with other content with 409', async () => {
    const file = jpeg();
    const parts: Part[] = [
      ['webhook_url', hook],
      ['family', 'A'],
      ['id_gen', 'job-0004'],
      ['result', file, 'a.jpg'],
    ];
    const first = await submit(parts);
    expect(first.status).toBe(202);
    const again = await submit(parts);
    expect(again.status).toBe(200);
    expect(again.body.id_gen).toBe('job-0004');
    const differing: Part[][] = [
      [parts[0]!, parts[1]!, parts[2]!, ['result', jpeg(), 'a.jpg']],
      [parts[0]!, parts[1]!, ['status', 'success'], parts[2]!, parts[3]!],
      [parts[0]!, parts[1]!, parts[2]!, ['message', 'failed after all']],
    ];
    for (const other of differing) {
      expect(await submit(other)).toMatchObject({ status: 409, body: { error: { code: 'conflict' } } });
    }
    await waitForCallback(run, 'job-0004', ['delivered']);
    expect(received('job-0004')).toHaveLength(1);
    expect((await keptKeys()).filter((key) => key.startsWith('job-0004.'))).toHaveLength(1);
  });

  it.skipIf(!existsSync('/usr/bin/curl'))('takes a hand-in from curl -F', async () => {
    const file = jpeg(50_000);
    const path = join(run.dir, 'upload.jpg');
    await writeFile(path, file);
    const { stdout } = await promisify(execFile)('/usr/bin/curl', [
      '-sS',
      '-w',
      '\n%{http_code}',
      '-F',
      `webhook_url=${hook}`,
      '-F',
      'family=B',
      '-F',
      'id_gen=job-curl',
      '-F',
      `result=@${path};type=image/jpeg`,
      `${run.url}/v1/callbacks`,
    ]);
    const [body, status] = stdout.split('\n');
    expect(status).toBe('202');
    expect(JSON.parse(body!)).toMatchObject({ id_gen: 'job-curl', kind: 'external', state: 'succeeded' });
    await receiving.waitFor(['job-curl']);
    const callback = received('job-curl')[0]?.callback;
    expect(callback?.event === 'success' && callback.file.sha256).toBe(sha256(await readFile(path)));
  });

  const base: Part[] = [
    ['webhook_url', 'http://127.0.0.1:9/hook'],
    ['family', 'A'],
    ['id_gen', 'bad-1'],
  ];
  const cases: [string, Part[] | string, string][] = [
    [
      'no webhook_url',
      [
        ['family', 'A'],
        ['id_gen', 'bad-1'],
        ['message', 'x'],
      ],
      'missing_part',
    ],
    ['neither file nor message', base, 'missing_part'],
    ['a file and a message', [...base, ['message', 'x'], ['result', jpeg(), 'a.jpg']], 'unexpected_part'],
    ['PNG bytes', [...base, ['result', PNG, 'a.jpg']], 'media_mismatch'],
    ['MP4 in family B', [base[0]!, ['family', 'B'], base[2]!, ['result', mp4(), 'a.mp4']], 'media_mismatch'],
    ['a file over the limit', [...base, ['result', jpeg(MAX_FILE_BYTES + 1), 'a.jpg']], 'file_too_large'],
    [
      'an id_gen of ../',
      [base[0]!, base[1]!, ['id_gen', '../../../etc/passwd'], ['message', 'x']],
      'invalid',
    ],
    ['family C', [base[0]!, ['family', 'C'], base[2]!, ['message', 'x']], 'invalid'],
    [
      'a webhook_url that is no URL',
      [['webhook_url', 'nope'], base[1]!, base[2]!, ['message', 'x']],
      'invalid',
    ],
    ['a time_gen that is no time', [...base, ['time_gen', 'yesterday'], ['message', 'x']], 'invalid'],
    ['an unknown part', [...base, ['prompt', 'x'], ['message', 'x']], 'unexpected_part'],
    ['a repeated part', [...base, ['family', 'A'], ['message', 'x']], 'duplicate_part'],
    ['result as text', [...base, ['result', 'not a file']], 'expected_file'],
    ['the file before id_gen', [base[0]!, base[1]!, ['result', jpeg(), 'a.jpg'], base[2]!], 'missing_part'],
    ['a JSON body', '{"webhook_url":"http://127.0.0.1:9/"}', 'not_multipart'],
  ];
  it.each(cases)('refuses %s with 400 and its code, keeping nothing', async (_, parts, code) => {
    const before = await keptKeys();
    const answer = await submit(
      parts,
      typeof parts === 'string' ? { 'content-type': 'application/json' } : {},
    );
    expect(answer).toMatchObject({ status: 400, body: { error: { code } } });
    expect(await run.store.getOperation('default', 'bad-1')).toBeUndefined();
    expect(await keptKeys()).toEqual(before);
  });

  it('keeps nothing of an upload whose client went away midway', async () => {
    const before = await keptKeys();
    const boundary = 'cut-off-boundary';
    const head =
      [
        ['webhook_url', hook],
        ['family', 'A'],
        ['id_gen', 'cut-1'],
      ]
        .map(
          ([name, value]) =>
            `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
        )
        .join('') +
      `--${boundary}\r\nContent-Disposition: form-data; name="result"; filename="a.jpg"\r\n\r\n`;
    const { port } = new URL(run.url);
    const socket = connect(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    socket.write(
      `POST /v1/callbacks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\n` +
        `Content-Length: 10000000\r\n\r\n${head}`,
    );
    socket.write(jpeg(200_000));
    // Not even a partial file is left (the directory store writes `<key>.<random>.part` first).
    const partial = async () =>
      (await readdir(join(run.dir, 'results')).catch(() => [])).filter((name) => name.startsWith('cut-1'));
    for (let i = 0; i < 100 && (await partial()).length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await partial()).toHaveLength(1); // the upload is under way
    socket.destroy();
    for (let i = 0; i < 100 && (await partial()).length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await partial()).toEqual([]);
    expect(await keptKeys()).toEqual(before);
    expect(await run.store.getOperation('default', 'cut-1')).toBeUndefined();
  });

  it("refuses another site's page, as every /v1 POST", async () => {
    const answer = await submit(
      [
        ['webhook_url', hook],
        ['family', 'A'],
        ['id_gen', 'cross-1'],
        ['message', 'x'],
      ],
      { origin: 'http://evil.example' },
    );
    expect(answer).toMatchObject({ status: 403, body: { error: { code: 'cross_site_request' } } });
    expect(await run.store.getOperation('default', 'cross-1')).toBeUndefined();
  });

  it('is a function for in-process use, with the same rules', async () => {
    const path = join(run.dir, 'in-process.jpg');
    const file = jpeg();
    await writeFile(path, file);
    const input = { webhook_url: hook, family: 'A', id_gen: 'job-0005', result: path };
    const first = await submitCallback(run.store, run.service.blobs, input);
    expect(first).toMatchObject({ created: true, operation: { kind: 'external', state: 'succeeded' } });
    expect(await submitCallback(run.store, run.service.blobs, input)).toMatchObject({ created: false });
    await expect(
      submitCallback(run.store, run.service.blobs, { ...input, result: undefined, message: 'no' }),
    ).rejects.toMatchObject({ code: 'conflict' });
    await receiving.waitFor(['job-0005']);
  });
});
