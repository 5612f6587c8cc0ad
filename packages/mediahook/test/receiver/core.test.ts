/**
 * Behaviour of the core receiver that does not depend on the adapter: file names, a custom
 * sink, the outcome observer, and `handle()` called directly.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FileSink } from '../../src/protocol/index.ts';
import { createReceiver, fileNameFor, MemoryReceiptStore } from '../../src/receiver/index.ts';
import { ADAPTERS, startReceiver } from './adapters.ts';
import {
  expectFile,
  jpegBytes,
  newSecret,
  post,
  send,
  sha256,
  storedFiles,
  tempDir,
  wire,
} from './helpers.ts';

describe('fileNameFor', () => {
  it('keeps a harmless id_gen as it is', () => {
    expect(fileNameFor('0192f0e4-7c3a-7b1e-9d2f-5a6b7c8d9e0f')).toBe('0192f0e4-7c3a-7b1e-9d2f-5a6b7c8d9e0f');
    expect(fileNameFor('op_1.v2')).toBe('op_1.v2');
  });

  it.each(['../etc/passwd', 'a/b', 'a\\b', '.hidden', 'x..y', '', 'é', 'x'.repeat(200)])(
    'hashes %j into a plain name',
    (id) => {
      const name = fileNameFor(id);
      expect(name).toMatch(/^_[0-9a-f]{64}$/);
      expect(fileNameFor(id)).toBe(name);
    },
  );
});

describe.each(ADAPTERS)('$name', (adapter) => {
  it('still answers 200 and keeps the file when the outcome observer throws', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const harness = await startReceiver(adapter, {
        onOutcome: () => {
          throw new Error('logger down');
        },
      });
      const callback = await wire();
      expect((await send(harness.url, callback)).status).toBe(200);
      await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
      expect(await harness.receiver.store.get(callback.id)).toBeDefined();
      // A rejected callback is answered too, not left hanging.
      expect((await post(harness.url, '{}', { 'content-type': 'application/json' })).status).toBe(500);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => warning.message)).toContain('onOutcome failed: logger down');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('reports the request headers and verdict of every outcome', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire();
    await send(harness.url, callback);
    await send(harness.url, callback);
    await harness.settled(2);
    expect(harness.outcomes.map((outcome) => outcome.verdict)).toEqual(['accepted', 'duplicate']);
    expect(harness.outcomes[0]?.headers).toMatchObject({
      'content-type': callback.contentType,
      'content-length': String(callback.body.length),
    });
    expect(harness.outcomes[0]?.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('calls a large body that is no callback at all not_multipart, not too large', async () => {
    const harness = await startReceiver(adapter, { limits: { fileBytes: 1000 } });
    const answer = await post(harness.url, Buffer.alloc(50_000, 'a'), { 'content-type': 'text/plain' });
    expect(answer).toMatchObject({ status: 500, body: { error: { code: 'not_multipart' } } });
    expect(await storedFiles(harness.out)).toEqual([]);
  });
});

describe('a custom sink', () => {
  it('gets the bytes; nothing is stored in out and the path is null', async () => {
    const taken: Buffer[] = [];
    let closed = 0;
    const sink = (): FileSink => ({
      write: (chunk) => {
        taken.push(Buffer.from(chunk));
      },
      close: async () => {
        closed += 1;
      },
      abort: async () => {},
    });
    const harness = await startReceiver(ADAPTERS[0]!, { sink });
    const callback = await wire({
      file: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(1 << 20, 7)]),
    });
    expect((await send(harness.url, callback)).status).toBe(200);
    expect(sha256(Buffer.concat(taken))).toBe(sha256(callback.file!));
    expect(closed).toBe(1);
    expect(harness.successes[0]?.file.path).toBeNull();
    expect(await storedFiles(harness.out)).toEqual([]);
    expect(await harness.receiver.store.get(callback.id)).toMatchObject({
      file_path: null,
      bytes: callback.file!.length,
    });
  });
});

describe('createReceiver', () => {
  it.each([['not-a-secret'], ['whsec_'], ['whsec_c2hvcnQ='], ['']])(
    'refuses the secret %j at once, not on every callback',
    async (secret) => {
      const out = await tempDir();
      expect(() => createReceiver({ out, secret, store: new MemoryReceiptStore() })).toThrow(TypeError);
      expect(() =>
        createReceiver({ out, secret: [newSecret(), secret], store: new MemoryReceiptStore() }),
      ).toThrow(TypeError);
    },
  );
});

describe('Receiver.handle()', () => {
  it('takes a body as a Uint8Array or an async iterable, and a failure set by an adapter', async () => {
    const out = await tempDir();
    const receiver = createReceiver({ out, store: new MemoryReceiptStore() });
    try {
      const first = await wire();
      const header = (name: string) => first.headers[name];
      expect((await receiver.handle({ header, body: first.body })).status).toBe(200);

      const second = await wire({ event: 'error' });
      async function* pieces() {
        for (const byte of second.body) yield Uint8Array.of(byte);
      }
      const answer = await receiver.handle({ header: (name) => second.headers[name], body: pieces() });
      expect(answer).toMatchObject({ status: 200, closeConnection: false });

      const failed = await receiver.handle({
        header: () => undefined,
        body: null,
        failure: new Error('secret'),
      });
      expect(failed.status).toBe(500);
      expect(failed.closeConnection).toBe(true);
      // An unforeseen error does not leak its message.
      expect(JSON.parse(failed.body)).toEqual({
        error: { code: 'internal_error', message: 'the callback could not be processed' },
      });
      expect(failed.headers['content-type']).toMatch(/^application\/json/);
      expect((await readdir(out)).sort()).toEqual([`${first.id}.jpg`]);
    } finally {
      await receiver.close();
    }
  });

  it('names a file over its limit file_too_large however the body comes, and body_too_large only past a set bound', async () => {
    const callback = await wire({ file: jpegBytes(3 * 1024 * 1024) });
    const header = (name: string) => (name === 'content-length' ? undefined : callback.headers[name]);
    async function* chunksOf(size: number) {
      for (let at = 0; at < callback.body.length; at += size) yield callback.body.subarray(at, at + size);
    }
    const bodies: [string, () => Uint8Array | AsyncIterable<Uint8Array>][] = [
      ['whole, as a framework keeps it', () => callback.body],
      ['in one chunk, length untold', () => chunksOf(callback.body.length)],
      ['in 4 MiB chunks', () => chunksOf(4 * 1024 * 1024)],
      ['in 64 KiB chunks', () => chunksOf(64 * 1024)],
    ];
    for (const [maxBodyBytes, code] of [
      [undefined, 'file_too_large'],
      [512 * 1024, 'body_too_large'],
    ] as const) {
      const out = await tempDir();
      const receiver = createReceiver({
        out,
        store: new MemoryReceiptStore(),
        limits: { fileBytes: 1024 * 1024 },
        maxBodyBytes,
      });
      try {
        for (const [how, body] of bodies) {
          const answer = await receiver.handle({ header, body: body() });
          expect(JSON.parse(answer.body).error.code, `${how}, maxBodyBytes ${maxBodyBytes}`).toBe(code);
        }
        expect(await readdir(out)).toEqual([]);
      } finally {
        await receiver.close();
      }
    }
  });

  it('answers aborted when the body stream fails midway', async () => {
    const out = await tempDir();
    const receiver = createReceiver({ out, store: new MemoryReceiptStore() });
    const callback = await wire({
      file: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(3 << 20)]),
    });
    async function* failing() {
      yield callback.body.subarray(0, 2 << 20);
      throw new Error('socket hang up');
    }
    const answer = await receiver.handle({ header: (name) => callback.headers[name], body: failing() });
    expect(JSON.parse(answer.body).error.code).toBe('aborted');
    expect(await readdir(out)).toEqual([]);
    await receiver.close();
  });
});
