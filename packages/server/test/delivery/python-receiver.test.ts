/**
 * The sender against a receiver written as a Flask user writes one (fixtures/werkzeug-receiver.py):
 * werkzeug reads the form and files from the very bytes it verifies the Standard Webhooks
 * signature over, in Python. Loopback only. Skipped, with a message, where python3 with werkzeug
 * is not installed.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallbackSender } from '../../src/delivery/index.ts';
import {
  encodeCallback,
  type Family,
  type MediaType,
  type OutgoingCallback,
} from '../../../mediahook/src/protocol/index.ts';
import { pythonWith } from '../../../mediahook/test/python-interpreter.ts';
import { jpegBytes } from './harness.ts';
import { LOOPBACK } from './receivers.ts';

const python = pythonWith('werkzeug');
if (!python) console.warn('python-receiver: SKIPPING (python3 with werkzeug is not installed)');

const FIXTURE = fileURLToPath(new URL('fixtures/werkzeug-receiver.py', import.meta.url));
const secret = `whsec_${randomBytes(24).toString('base64')}`;

/** What the Python side read, as it answers it. */
interface Reading {
  contentLength: number;
  bodyBytes: number;
  webhookId: string | null;
  signatureProblem: string | null;
  fields: [string, string][];
  files: { name: string; filename: string; contentType: string; bytes: number; sha256: string }[];
  error?: { code: string; message: string };
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** An MP4 to a sniffer: a box size, then `ftyp` at offset 4; random bytes (CR, LF, dashes) after. */
function mp4Bytes(size: number): Buffer {
  const bytes = randomBytes(size);
  bytes.set([0, 0, 0, 0x18], 0);
  bytes.write('ftypisom', 4, 'latin1');
  return bytes;
}

interface Case {
  label: string;
  family: Family;
  /** The result or error part's name. */
  part: string;
  file?: { bytes: Buffer; mediaType: MediaType; ext: string; fromPath?: true };
  message?: string;
}

const CASES: Case[] = [
  { label: 'A success, JPEG', family: 'A', part: 'result_pv', file: jpeg() },
  {
    label: 'A success, MP4 of 3 MiB streamed from a file',
    family: 'A',
    part: 'result_pv',
    file: { bytes: mp4Bytes(3 * 1024 * 1024 + 7), mediaType: 'video/mp4', ext: '.mp4', fromPath: true },
  },
  { label: 'B success, JPEG', family: 'B', part: 'res_image', file: jpeg() },
  { label: 'A error', family: 'A', part: 'message', message: 'prompt refusé ✓' },
  { label: 'B error', family: 'B', part: 'img_message', message: 'prompt refusé ✓\r\n-- à la ligne' },
];

function jpeg(): NonNullable<Case['file']> {
  return { bytes: jpegBytes(64 * 1024), mediaType: 'image/jpeg', ext: '.jpg' };
}

/** The answer's body read as JSON, or kept as text (werkzeug's own HTML 500 page, say). */
function readingOf(head: string | null): Reading | string | null {
  try {
    return head === null ? null : (JSON.parse(head) as Reading);
  } catch {
    return head;
  }
}

describe.skipIf(!python)('a werkzeug receiver that verifies signatures in Python', () => {
  let child: ChildProcessWithoutNullStreams | undefined;
  let stderr = '';
  let url = '';
  let dir = '';
  const senders: CallbackSender[] = [];

  /** A sender whose whole answer (the reading) is kept. */
  function sender(secrets: string[]): CallbackSender {
    const made = new CallbackSender({ secrets, ssrf: { allowPrivate: true }, responseHeadBytes: 64 * 1024 });
    senders.push(made);
    return made;
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mediahook-python-receiver-'));
    // stdin stays open: the fixture exits when it closes, so it cannot outlive this process.
    const started = spawn(python!, [FIXTURE, secret], { stdio: 'pipe' });
    child = started;
    started.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      started.stdout.setEncoding('utf8').on('data', (text: string) => {
        out += text;
        const match = /\{"port": (\d+)\}\n/.exec(out);
        if (match) resolve(Number(match[1]));
      });
      started.on('error', reject);
      started.on('exit', (code) => reject(new Error(`werkzeug-receiver.py exited with ${code}: ${stderr}`)));
    });
    url = `http://${LOOPBACK}:${port}/hook`;
  });

  afterAll(async () => {
    for (const made of senders) await made.close();
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each(CASES)('$label: delivered, every part read as sent, signature verified', async (c) => {
    const id = randomUUID();
    const time = new Date().toISOString();
    const common = { family: c.family, id_gen: id, time_gen: time };
    let callback: OutgoingCallback;
    if (c.file) {
      let source: string | Buffer = c.file.bytes;
      if (c.file.fromPath) await writeFile((source = join(dir, `${id}${c.file.ext}`)), c.file.bytes);
      callback = {
        ...common,
        event: 'success',
        status: 'success',
        file: source,
        mediaType: c.file.mediaType,
      };
    } else {
      callback = { ...common, event: 'error', status: 'error', message: c.message! };
    }

    const attempt = await sender([secret]).send(url, callback);

    // The length of any encoding of it: boundaries differ, their length does not.
    const { contentLength } = await encodeCallback(callback);
    const text: [string, string][] = c.message === undefined ? [] : [[c.part, c.message]];
    const expected: Reading = {
      contentLength,
      bodyBytes: contentLength,
      webhookId: id,
      signatureProblem: null,
      fields: [['status', callback.status], ['id_gen', id], ['time_gen', time], ...text],
      files: !c.file
        ? []
        : [
            {
              name: c.part,
              filename: `${id}${c.file.ext}`,
              contentType: c.file.mediaType,
              bytes: c.file.bytes.length,
              sha256: sha256(c.file.bytes),
            },
          ],
    };
    const reading = readingOf(attempt.response_head);
    expect({ verdict: attempt.verdict, status: attempt.status_code, reading }, stderr).toEqual({
      verdict: 'delivered',
      status: 200,
      reading: expected,
    });
  });

  it('answers 500 to a signature made with a secret it does not know, which is retried', async () => {
    const other = `whsec_${randomBytes(24).toString('base64')}`;
    const attempt = await sender([other]).send(url, {
      family: 'B',
      event: 'error',
      status: 'error',
      id_gen: randomUUID(),
      time_gen: new Date().toISOString(),
      message: 'prompt refusé ✓',
    });
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: 500 });
    expect(readingOf(attempt.response_head)).toMatchObject({
      signatureProblem: 'no signature matches',
      error: { code: 'bad_signature' },
    });
  });
});
