/**
 * Every example in examples/ receives a real callback: built in-process on port 0, and run as a
 * program the way the README says (PORT=0, the URL read from stderr).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { serve } from '@hono/node-server';
import { describe, expect, it, onTestFinished } from 'vitest';
import * as expressExample from '../examples/express.ts';
import * as fastifyExample from '../examples/fastify.ts';
import * as honoExample from '../examples/hono.ts';
import * as nodeExample from '../examples/node-http.ts';
import {
  expectFile,
  jpegBytes,
  newSecret,
  send,
  tempDir,
  type Wire,
  wire,
} from '../packages/mediahook/test/receiver/helpers.ts';

const run = promisify(execFile);

const ROOT = fileURLToPath(new URL('..', import.meta.url));

async function listenOn(server: Server): Promise<string> {
  if (!server.listening) {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  }
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/callbacks`;
}

/** Sends one image callback (signed when a secret is given) and checks the 200 and the stored file. */
async function expectReceived(url: string, out: string, secret?: string): Promise<Wire> {
  const callback = await wire({ family: 'A', event: 'success', ...(secret ? { sign: secret } : {}) });
  const answer = await send(url, callback);
  expect(answer).toEqual({ status: 200, body: { received: true, id_gen: callback.id, duplicate: false } });
  await expectFile(join(out, `${callback.id}.jpg`), callback.file);
  return callback;
}

const quiet = () => {};

describe('examples built in-process', () => {
  it('node-http', async () => {
    const out = await tempDir();
    const lines: string[] = [];
    const { server, receiver } = nodeExample.createApp({ out, log: (line) => lines.push(line) });
    onTestFinished(() => receiver.close());
    const url = await listenOn(server);
    const callback = await expectReceived(url, out);
    expect(lines).toEqual([expect.stringContaining(`${callback.id}: image/jpeg`)]);
    // A webhook URL may carry a query string of the client's own.
    await expectReceived(`${url}?tenant=7`, out);
    const other = await fetch(url.replace('/callbacks', '/'));
    expect(other.status).toBe(404);

    // curl asks Expect: 100-continue for a file over 1 MiB: answered Continue, then stored.
    const file = join(out, 'upload.jpg');
    const jpeg = jpegBytes(2 * 1024 * 1024);
    await writeFile(file, jpeg);
    const fields = ['status=success', 'id_gen=curl-large', 'time_gen=1700000000', `result_pv=@${file}`];
    const { stdout, stderr } = await run('/usr/bin/curl', [
      ...['--silent', '--show-error', '--verbose', '--noproxy', '*', '--max-time', '10'],
      ...['-H', 'Expect: 100-continue'],
      ...fields.flatMap((field) => ['-F', field]),
      url,
    ]);
    expect(stderr).toContain('HTTP/1.1 100 Continue');
    expect(JSON.parse(stdout)).toEqual({ received: true, id_gen: 'curl-large', duplicate: false });
    await expectFile(join(out, 'curl-large.jpg'), jpeg);
  });

  it('express, with a secret', async () => {
    const out = await tempDir();
    const secret = newSecret();
    const { app, receiver } = expressExample.createApp({ out, secret, log: quiet });
    onTestFinished(() => receiver.close());
    const url = await listenOn(createServer(app));
    const callback = await expectReceived(url, out, secret);
    const unsigned = await send(url, await wire());
    expect(unsigned.body.error?.code).toBe('bad_signature');
    const receipts = await fetch(url.replace('/callbacks', '/receipts'));
    expect(await receipts.json()).toEqual([expect.objectContaining({ id_gen: callback.id })]);
  });

  it('fastify', async () => {
    const out = await tempDir();
    const app = await fastifyExample.createApp({ out, log: quiet });
    onTestFinished(() => app.close());
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    await expectReceived(`http://127.0.0.1:${port}/callbacks`, out);
  });

  it('hono', async () => {
    const out = await tempDir();
    const { app, receiver } = honoExample.createApp({ out, log: quiet });
    onTestFinished(() => receiver.close());
    const url = await listenOn(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server);
    await expectReceived(url, out);
  });

  it('nextjs-route: POST with a real Request, files in ./callbacks', async () => {
    const dir = await tempDir();
    const before = process.cwd();
    // The route stores under ./callbacks of the server's working directory.
    process.chdir(dir);
    try {
      const route = await import('../examples/nextjs-route.ts');
      expect(route.runtime).toBe('nodejs');
      const callback = await wire({ family: 'B', event: 'success' });
      const response = await route.POST(
        new Request('http://127.0.0.1/callbacks', {
          method: 'POST',
          headers: callback.headers,
          body: callback.body,
        }),
      );
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ received: true, id_gen: callback.id, duplicate: false });
      await expectFile(join(dir, 'callbacks', `${callback.id}.jpg`), callback.file);
    } finally {
      process.chdir(before);
    }
  });
});

/** Runs an example with tsx in `cwd` and resolves with the URL it prints on stderr. */
async function runExample(name: string, cwd: string, env: Record<string, string>): Promise<string> {
  const child: ChildProcess = spawn(join(ROOT, 'node_modules/.bin/tsx'), [join(ROOT, 'examples', name)], {
    cwd,
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  onTestFinished(async () => {
    if (child.exitCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
  });
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
      const url = /http:\/\/127\.0\.0\.1:\d+\/callbacks/.exec(stderr)?.[0];
      if (url) resolve(url);
    });
    child.on('exit', (code) => reject(new Error(`${name} exited with ${code}: ${stderr}`)));
    child.on('error', reject);
  });
}

describe.each(['node-http.ts', 'express.ts', 'fastify.ts', 'hono.ts'])(
  'examples/%s run as a program',
  (name) => {
    it('prints its URL on stderr, stores a callback in ./callbacks, refuses an unsigned one before its upload', async () => {
      const cwd = await tempDir();
      const secret = newSecret();
      const url = await runExample(name, cwd, { WEBHOOK_SECRET: `${newSecret()} ${secret}` });
      await expectReceived(url, join(cwd, 'callbacks'), secret);

      // curl asks Expect: 100-continue for a file over 1 MiB; unsigned, it is refused before the upload.
      const file = join(cwd, 'upload.jpg');
      await writeFile(file, jpegBytes(2 * 1024 * 1024));
      const fields = ['status=success', 'id_gen=unsigned', 'time_gen=1700000000', `result_pv=@${file}`];
      const { stdout, stderr } = await run('/usr/bin/curl', [
        ...['--silent', '--show-error', '--verbose', '--noproxy', '*', '--max-time', '10'],
        ...['-H', 'Expect: 100-continue', '--expect100-timeout', '5'],
        ...fields.flatMap((field) => ['-F', field]),
        url,
      ]);
      expect(stderr).not.toContain('100 Continue');
      expect(JSON.parse(stdout)).toEqual({ error: { code: 'bad_signature', message: expect.any(String) } });
    });
  },
);
