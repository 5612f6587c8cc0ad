/** An app behind `listen --forward-to`, and a sender whose exact bytes the tests know. */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, beforeEach } from 'vitest';
import { BodySigner, encodeCallback, type OutgoingCallback } from '../../src/protocol/index.ts';
import { jpegBytes } from './helpers.ts';
import type { Listener } from './listen-helpers.ts';

/** The Standard Webhooks headers a forward or replay must carry as sent (or sign afresh). */
export const WEBHOOK_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/** A family A success callback carrying a JPEG of `bytes` bytes. */
export function jpegCallback(id: string, bytes = 3000) {
  return {
    family: 'A',
    status: 'success',
    time_gen: '2026-11-28T10:00:00.000Z',
    event: 'success',
    id_gen: id,
    file: jpegBytes(bytes),
    mediaType: 'image/jpeg',
  } as const;
}

export interface AppRequest {
  url: string;
  headers: IncomingHttpHeaders;
  bytes: number;
  sha256: string;
  /** The body itself, for bodies up to 1 MiB (larger ones are hashed only). */
  body: Buffer | null;
}

export interface App {
  url: string;
  requests: AppRequest[];
  /** What the next requests are answered with. */
  answer: { status: number; body: string; type: string };
  close(): Promise<void>;
}

/** A loopback app that hashes each body as it streams in and answers with `answer`. */
export async function startApp(): Promise<App> {
  const requests: AppRequest[] = [];
  const app: App = {
    url: '',
    requests,
    answer: { status: 200, body: '{"ok":true}', type: 'application/json' },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req, res) => {
    const hash = createHash('sha256');
    const kept: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.length;
      if (bytes <= 1024 * 1024) kept.push(chunk);
    });
    req.on('end', () => {
      const body = bytes <= 1024 * 1024 ? Buffer.concat(kept) : null;
      requests.push({ url: req.url ?? '', headers: req.headers, bytes, sha256: hash.digest('hex'), body });
      res.writeHead(app.answer.status, { 'content-type': app.answer.type });
      res.end(app.answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  app.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  return app;
}

export interface Sent {
  status: number;
  body: Record<string, any>;
  /** The request exactly as sent. */
  headers: Record<string, string>;
  sha256: string;
}

/** Sends a callback (signed with `secret`); `tamper` changes the signature after signing. */
export async function sendCallback(
  url: string,
  callback: OutgoingCallback,
  options: { secret?: string; tamper?: boolean } = {},
): Promise<Sent> {
  const encoded = await encodeCallback(callback);
  const chunks: Buffer[] = [];
  for await (const chunk of encoded.body()) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  const headers: Record<string, string> = { 'content-type': encoded.contentType };
  if (options.secret) {
    const signer = new BodySigner(options.secret, callback.id_gen);
    signer.update(body);
    Object.assign(headers, signer.headers());
    if (options.tamper) headers['webhook-signature'] = `v1,${Buffer.alloc(32, 7).toString('base64')}`;
  }
  const response = await request(url, { method: 'POST', headers, body });
  return {
    status: response.statusCode,
    body: (await response.body.json()) as Record<string, any>,
    headers,
    sha256: createHash('sha256').update(body).digest('hex'),
  };
}

/** A suite's fresh `--out` directory and app per test; the `listener` a test starts is stopped. */
export function forwardingPerTest(prefix: string): { out: string; app: App; listener: Listener | undefined } {
  const state = {} as { out: string; app: App; listener: Listener | undefined };
  beforeEach(async () => {
    state.out = await mkdtemp(join(tmpdir(), prefix));
    state.app = await startApp();
  });
  afterEach(async () => {
    await state.listener?.stop();
    state.listener = undefined;
    await state.app.close();
    await rm(state.out, { recursive: true, force: true });
  });
  return state;
}
