/**
 * Requests that Node's HTTP parser cannot read, answered through `clientError`: the callback
 * being processed keeps its own 200 or 500, and a request that never reached the handler gets
 * a 500 with its code instead of Node's bare 400. Raw sockets, so that every byte is ours.
 */
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import { allowHalfOpenAnswers, expressHandler, nodeHandler, webHandler } from '../../src/receiver/index.ts';
import { createListenServer, type ListenServerOptions } from '../../src/web/listen-server.ts';
import { ADAPTERS, type Adapter, listen, startReceiver } from './adapters.ts';
import { expectFile, storedFiles, tempDir, type Wire, wire } from './helpers.ts';

/** node:http with the handler on both `request` and `clientError`. */
const nodeWithClientError: Adapter = {
  name: 'node:http with clientError',
  start(receiver) {
    const handler = nodeHandler(receiver);
    const server = createServer(handler);
    server.on('clientError', handler.clientError);
    return listen(server);
  },
};

/** `webHandler` under @hono/node-server, its server told to answer after a half-close. */
const webWithHalfOpenAnswers: Adapter = {
  name: 'Web handler with allowHalfOpenAnswers',
  start(receiver) {
    const server = createAdaptorServer({ fetch: webHandler(receiver) }) as Server;
    allowHalfOpenAnswers(server);
    return listen(server);
  },
};

/** Express with `expressHandler` on `/callbacks` and its `clientError` on the server. */
const expressWithClientError: Adapter = {
  name: 'Express with clientError',
  start(receiver) {
    const app = express();
    const callbacks = expressHandler(receiver);
    app.post('/callbacks', callbacks);
    const server = createServer(app);
    server.on('clientError', callbacks.clientError);
    return listen(server);
  },
};

/** Writes `bytes` on a fresh connection (then half-closes, with `end`) and reads all it gets. */
function exchange(port: number, bytes: Buffer, options: { end?: boolean } = {}): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('latin1').on('data', (text: string) => (answer += text));
    socket.on('error', () => {});
    socket.on('close', () => resolve(answer));
    socket.write(bytes);
    if (options.end) socket.end();
  });
}

/** `mediahook listen`'s server on a free port, closed with its receiver when the test ends. */
async function startListenServer(options: ListenServerOptions = {}): Promise<number> {
  const listenServer = createListenServer({ out: await tempDir(), ...options });
  const running = await listen(listenServer.server);
  onTestFinished(async () => {
    await running.close();
    await listenServer.receiver.close();
  });
  return running.port;
}

function head(callback: Wire, extra: string): Buffer {
  return Buffer.from(
    `POST /callbacks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${callback.contentType}\r\n${extra}\r\n`,
    'latin1',
  );
}

function errorCode(answer: string): string | undefined {
  return /"code":"([a-z_]+)"/.exec(answer)?.[1];
}

describe('clientError', () => {
  it('answers a callback followed by bytes that are not a request, then closes', async () => {
    const harness = await startReceiver(nodeWithClientError);
    for (const connection of ['close', 'keep-alive']) {
      const callback = await wire();
      const bytes = Buffer.concat([
        head(callback, `Content-Length: ${callback.body.length}\r\nConnection: ${connection}\r\n`),
        callback.body,
        Buffer.from('garbage\r\n\r\n'),
      ]);
      const answer = await exchange(harness.port, bytes);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(answer).toMatch(/\r\nconnection: close\r\n/i);
      expect(answer).toContain(`"id_gen":"${callback.id}"`);
      await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
    }
  });

  it.each([nodeWithClientError, expressWithClientError])(
    'answers a body longer than its Content-Length with the callback’s own 500 ($name)',
    async (adapter) => {
      const harness = await startReceiver(adapter);
      const callback = await wire();
      const bytes = Buffer.concat([
        head(callback, `Content-Length: ${callback.body.length - 10}\r\n`),
        callback.body,
      ]);
      const answer = await exchange(harness.port, bytes);
      expect(answer).toMatch(/^HTTP\/1\.1 500 /);
      expect(errorCode(answer)).toBe('malformed_multipart');
      expect(await storedFiles(harness.out)).toEqual([]);
    },
  );

  it('answers a body cut off by a half-close as aborted, while the sender still reads', async () => {
    const harness = await startReceiver(nodeWithClientError);
    const callback = await wire();
    const bytes = Buffer.concat([
      head(callback, `Content-Length: ${callback.body.length}\r\n`),
      callback.body.subarray(0, callback.body.length - 40),
    ]);
    const answer = await exchange(harness.port, bytes, { end: true });
    expect(answer).toMatch(/^HTTP\/1\.1 500 /);
    expect(errorCode(answer)).toBe('aborted');
    await harness.settled(1);
    expect(harness.outcomes[0]?.error?.code).toBe('aborted');
    expect(await storedFiles(harness.out)).toEqual([]);
  });

  // A bare Web handler never sees the Node server: its users call allowHalfOpenAnswers.
  it.each([...ADAPTERS.filter((adapter) => adapter.name !== 'Web handler'), webWithHalfOpenAnswers])(
    'answers a whole callback whose sender half-closed after it, then closes ($name)',
    async (adapter) => {
      const harness = await startReceiver(adapter);
      const callback = await wire();
      const whole = Buffer.concat([
        head(callback, `Content-Length: ${callback.body.length}\r\n`),
        callback.body,
      ]);
      const answer = await exchange(harness.port, whole, { end: true });
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
      // A refusal gets out the same way.
      const broken = Buffer.from(
        callback.body.toString('latin1').replace(/\r\n--[^\r]*--\r\n$/, '\r\n'),
        'latin1',
      );
      const refused = await exchange(
        harness.port,
        Buffer.concat([head(callback, `Content-Length: ${broken.length}\r\n`), broken]),
        { end: true },
      );
      expect(refused).toMatch(/^HTTP\/1\.1 500 /);
      expect(errorCode(refused)).toBe('malformed_multipart');
    },
  );

  it('answers a whole callback whose sender half-closed after it (mediahook listen)', async () => {
    const port = await startListenServer();
    const callback = await wire();
    const whole = Buffer.concat([
      Buffer.from(
        `POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${callback.contentType}\r\nContent-Length: ${callback.body.length}\r\n\r\n`,
        'latin1',
      ),
      callback.body,
    ]);
    expect(await exchange(port, whole, { end: true })).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('answers a body cut off by a connection reset as aborted, not as broken HTTP', async () => {
    const harness = await startReceiver(nodeWithClientError);
    const callback = await wire();
    const socket = connect(harness.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(head(callback, `Content-Length: ${callback.body.length}\r\n`));
    socket.write(callback.body.subarray(0, callback.body.length / 2));
    // The body has started (the handler is reading it) before the reset.
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.resetAndDestroy();
    await harness.settled(1);
    expect(harness.outcomes[0]?.error).toMatchObject({
      code: 'aborted',
      message: 'the sender reset the connection before the body was complete',
    });
    expect(await storedFiles(harness.out)).toEqual([]);
  });

  it('closes a connection that never sent a byte without an answer or a record', async () => {
    const quick: Adapter = {
      name: 'node:http with short header timeouts',
      start(receiver) {
        const handler = nodeHandler(receiver);
        const server = createServer(
          { headersTimeout: 300, requestTimeout: 600, connectionsCheckingInterval: 50 },
          handler,
        );
        server.on('clientError', handler.clientError);
        return listen(server);
      },
    };
    const harness = await startReceiver(quick);
    expect(await exchange(harness.port, Buffer.alloc(0))).toBe('');
    // Headers begun and never finished are a request that did not arrive in time.
    const partial = await exchange(
      harness.port,
      Buffer.from('POST /callbacks HTTP/1.1\r\nHost: 127.0.0.1\r\n'),
    );
    expect(partial).toMatch(/^HTTP\/1\.1 500 /);
    expect(errorCode(partial)).toBe('timeout');
    await harness.settled(1);
    expect(harness.outcomes.map((outcome) => outcome.error?.code)).toEqual(['timeout']);
  });

  it('takes pipelined callbacks one at a time, in order, and none after an answer that closed', async () => {
    const harness = await startReceiver(nodeWithClientError);
    const request = (callback: Wire, body = callback.body, extra = '') =>
      Buffer.concat([head(callback, `Content-Length: ${body.length}\r\n${extra}`), body]);
    const sent = [await wire(), await wire({ family: 'B' }), await wire({ event: 'error' })];
    // The last asks to close: the connection ends once all three are answered.
    const all = await exchange(
      harness.port,
      Buffer.concat([
        request(sent[0]!),
        request(sent[1]!),
        request(sent[2]!, undefined, 'Connection: close\r\n'),
      ]),
    );
    const ids = sent.map((callback) => callback.id);
    expect([...all.matchAll(/"id_gen":"([^"]+)"/g)].map((match) => match[1])).toEqual(ids);
    expect(harness.outcomes.map((outcome) => outcome.callback?.id_gen)).toEqual(ids);

    const [refused, after] = [await wire(), await wire()];
    const broken = refused.body.subarray(0, refused.body.length - 20);
    const answer = await exchange(harness.port, Buffer.concat([request(refused, broken), request(after)]));
    expect(answer.match(/^HTTP\/1\.1 /gm)).toHaveLength(1);
    expect(errorCode(answer)).toBe('malformed_multipart');
    await harness.settled(4);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(harness.outcomes).toHaveLength(4);
    expect(await storedFiles(harness.out)).not.toContain(`${after.id}.jpg`);
  });

  const unreadable: [string, (callback: Wire) => Buffer, string][] = [
    [
      'Content-Length with Transfer-Encoding',
      (callback) =>
        Buffer.concat([
          head(callback, `Content-Length: ${callback.body.length}\r\nTransfer-Encoding: chunked\r\n`),
          callback.body,
        ]),
      'malformed_request',
    ],
    [
      'a chunk size that is not hex',
      (callback) => Buffer.concat([head(callback, 'Transfer-Encoding: chunked\r\n'), Buffer.from('zz\r\n')]),
      'malformed_request',
    ],
    [
      'headers over the server’s limit',
      (callback) => head(callback, `X-Padding: ${'a'.repeat(70_000)}\r\nContent-Length: 5\r\n`),
      'headers_too_large',
    ],
  ];

  it.each(unreadable)(
    'answers %s with 500 and its code, reported like any refusal',
    async (_, request, code) => {
      const harness = await startReceiver(nodeWithClientError);
      const answer = await exchange(harness.port, request(await wire()));
      expect(answer).toMatch(/^HTTP\/1\.1 500 /);
      expect(answer).toMatch(/\r\ncontent-type: application\/json/i);
      expect(errorCode(answer)).toBe(code);
      await harness.settled(1);
      expect(harness.outcomes[0]).toMatchObject({ verdict: 'rejected', error: { code } });
      expect(await storedFiles(harness.out)).toEqual([]);
    },
  );

  it('in `mediahook listen`, takes a callback without Host and answers an unreadable target in JSON', async () => {
    const port = await startListenServer();
    const callback = await wire();
    const noHost = Buffer.concat([
      Buffer.from(
        `POST /hook HTTP/1.1\r\nContent-Type: ${callback.contentType}\r\nContent-Length: ${callback.body.length}\r\nConnection: close\r\n\r\n`,
        'latin1',
      ),
      callback.body,
    ]);
    expect(await exchange(port, noHost)).toMatch(/^HTTP\/1\.1 200 /);
    const bad = await exchange(
      port,
      Buffer.from('GET http://[bad/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    );
    expect(bad).toMatch(/^HTTP\/1\.1 400 /);
    expect(errorCode(bad)).toBe('invalid_request');
  });

  it('is wired by `mediahook listen`, whose record of the refusal is printed like any other', async () => {
    const outcomes: string[] = [];
    const port = await startListenServer({
      onOutcome: (outcome) => outcomes.push(outcome.error?.code ?? outcome.verdict),
    });
    const [, request] = unreadable[0] ?? [];
    const answer = await exchange(port, request!(await wire()));
    expect(errorCode(answer)).toBe('malformed_request');
    expect(outcomes).toEqual(['malformed_request']);
  });
});
