/**
 * `serve` stopping on SIGTERM with a request still open, through the real command: it drains
 * in-flight requests on an open store, and a client that never finishes cannot hold it up.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ServeProcess, startServeProcess } from './service-harness.ts';

const BODY = JSON.stringify({ kind: 'image', family: 'A', prompt: 'p', webhook_url: 'http://127.0.0.1:9/x' });

/** Opens a POST /v1/operations announcing `length` bytes and sends the first 9 of `BODY`. */
async function startUpload(
  url: string,
  length: number,
): Promise<{ socket: Socket; answer: Promise<string> }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  socket.setEncoding('latin1').on('data', (text: string) => {
    received += text;
  });
  const answer = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  socket.write(
    `POST /v1/operations HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${length}\r\n\r\n${BODY.slice(0, 9)}`,
  );
  // Long enough for the server to have parsed the head and be waiting on the body.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { socket, answer };
}

async function waitForText(serve: ServeProcess, text: string): Promise<void> {
  while (!serve.stderr().includes(text)) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('serve on SIGTERM', () => {
  let dir: string;
  let serve: ServeProcess;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mediahook-shutdown-'));
    serve = await startServeProcess(['--data', dir, '--allow-private-urls']);
  });
  afterEach(async () => {
    serve?.child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('lets a request in flight finish on an open store, and closes its connection', async () => {
    const { socket, answer } = await startUpload(serve.url, Buffer.byteLength(BODY));
    serve.child.kill('SIGTERM');
    await waitForText(serve, 'SIGTERM, stopping');
    // Well past what closing the store alone takes: the store must still be open.
    await new Promise((resolve) => setTimeout(resolve, 500));
    socket.write(BODY.slice(9));
    const response = await answer;
    expect(response).toMatch(/^HTTP\/1\.1 202 /);
    expect(response).toMatch(/\r\nconnection: close\r\n/i);
    expect(await serve.exited).toBe(0);
    // The log is NDJSON on stdout, every line of it; stderr holds only lines for a person.
    const logged = serve
      .stdout()
      .split('\n')
      .filter((line) => line !== '');
    const events = logged.map((line) => (JSON.parse(line) as { event: string }).event);
    expect(events).toContain('operation_created');
    expect(events).not.toContain('api_error');
    expect(serve.stderr()).not.toMatch(/^\{/m);
  });

  it('exits within its grace period when a client never sends the rest of its body', async () => {
    const { socket, answer } = await startUpload(serve.url, 100);
    const started = Date.now();
    serve.child.kill('SIGTERM');
    const exit = await Promise.race([
      serve.exited,
      new Promise<string>((resolve) => setTimeout(() => resolve('still running after 15 s'), 15_000)),
    ]);
    expect(exit).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    await answer;
    expect(socket.destroyed).toBe(true);
  });
});
