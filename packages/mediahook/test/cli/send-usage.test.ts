/**
 * `mediahook send` refusing what it cannot send: wrong usage (exit 2) and unusable files
 * (exit 1), with nothing reaching the receiver.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mp4Bytes, type Receiver, runCli, startReceiver } from './helpers.ts';

let dir: string;
let mp4: string;
let text: string;
let receiver: Receiver;

const SECRET = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mediahook-send-usage-'));
  mp4 = join(dir, 'result.mp4');
  text = join(dir, 'notes.txt');
  await writeFile(mp4, mp4Bytes(5000));
  await writeFile(text, 'not a picture\n');
  receiver = await startReceiver();
});

afterAll(async () => {
  await receiver.close();
  await rm(dir, { recursive: true, force: true });
});

describe('mediahook send: refusals', () => {
  // These never reach the receiver, so they can run side by side.
  it.concurrent.for([
    { why: 'no URL', args: ['--family', 'A', '--message', 'x'], error: 'the URL is missing' },
    { why: 'a bad URL', args: ['not a url', '--family', 'A', '--message', 'x'], error: 'is not a URL' },
    {
      why: 'an ftp URL',
      args: ['ftp://127.0.0.1/', '--family', 'A', '--message', 'x'],
      error: 'http: or https:',
    },
    { why: 'no family', args: ['URL', '--message', 'x'], error: '--family is required' },
    { why: 'family C', args: ['URL', '--family', 'C', '--message', 'x'], error: '--family is A or B' },
    {
      why: 'file and message',
      args: ['URL', '--family', 'A', '--message', 'x', '--file', 'f'],
      error: 'exactly one',
    },
    { why: 'neither', args: ['URL', '--family', 'A'], error: 'exactly one' },
    {
      why: 'an unknown flag',
      args: ['URL', '--family', 'A', '--message', 'x', '--colour'],
      error: "unknown option '--colour'",
    },
    {
      why: 'a bad secret',
      args: ['URL', '--family', 'A', '--message', 'x', '--secret', 'hunter2'],
      error: 'whsec_',
    },
    {
      why: 'a short secret',
      args: ['URL', '--family', 'A', '--message', 'x', '--secret', 'whsec_abc'],
      error: '16 bytes',
    },
    { why: 'an empty id', args: ['URL', '--family', 'A', '--message', 'x', '--id', ''], error: '--id' },
    {
      why: 'an id over 256 bytes',
      args: ['URL', '--family', 'A', '--message', 'x', '--id', 'é'.repeat(129)],
      error: '256 bytes',
    },
    {
      why: 'an empty filename',
      args: ['URL', '--family', 'A', '--file', 'f', '--filename', ''],
      error: '--filename',
    },
    {
      why: 'a signed id outside ASCII',
      args: ['URL', '--family', 'A', '--message', 'x', '--secret', SECRET, '--id', 'opé'],
      error: 'printable ASCII only',
    },
    {
      why: 'a signed id with a space at an end',
      args: ['URL', '--family', 'A', '--message', 'x', '--secret', SECRET, '--id', 'op '],
      error: 'loses spaces at its ends',
    },
    {
      why: 'a family given twice, differently',
      args: ['URL', '--family', 'A', '--message', 'x', '--family', 'B'],
      error: '--family is given twice with different values',
    },
    {
      why: 'a message given twice, differently',
      args: ['URL', '--family', 'A', '--message', 'x', '--message=y'],
      error: '--message is given twice with different values',
    },
    {
      why: 'a bad timeout',
      args: ['URL', '--family', 'A', '--message', 'x', '--timeout', '30'],
      error: 'did you mean 30s?',
    },
    {
      why: 'a bad media type',
      args: ['URL', '--family', 'A', '--file', 'f', '--media-type', 'image/png'],
      error: '--media-type',
    },
    {
      why: 'video in family B',
      args: ['URL', '--family', 'B', '--file', 'f', '--media-type', 'video/mp4'],
      error: 'family B carries image/jpeg only',
    },
  ])('exits 2 on $why', async ({ args, error }, { expect }) => {
    const run = await runCli(['send', ...args.map((arg) => (arg === 'URL' ? receiver.url : arg))]);
    expect(run.stderr).toContain(error);
    expect(run.stderr).toContain("Run 'mediahook send --help' for usage.");
    expect(run.code).toBe(2);
    expect(receiver.requests).toHaveLength(0);
  });

  it('exits 2 on an MP4 in family B', async () => {
    const run = await runCli(['send', receiver.url, '--family', 'B', '--file', mp4]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('family B carries JPEG images only');
    expect(receiver.requests).toHaveLength(0);
  });

  it('exits 1 on a file that is neither JPEG nor MP4, and on a missing file', async () => {
    const notMedia = await runCli(['send', receiver.url, '--family', 'A', '--file', text]);
    expect(notMedia.code).toBe(1);
    expect(notMedia.stderr).toContain('neither a JPEG');
    const missing = await runCli(['send', receiver.url, '--family', 'A', '--file', join(dir, 'nope.jpg')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('cannot read the file');
    expect(receiver.requests).toHaveLength(0);
  });
});
