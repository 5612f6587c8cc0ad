/**
 * Receiving result callbacks in a Hono app, served on Node by @hono/node-server.
 *
 *   PORT=9000 WEBHOOK_SECRET=whsec_… npx tsx examples/hono.ts
 *
 * Callbacks go to POST http://127.0.0.1:9000/callbacks; result files land in ./callbacks.
 * The handler reads `c.req.raw` itself: call no `c.req.parseBody()` before it on this route.
 */
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createReceiver, deferContinue, type Receiver } from 'mediahook';
import { honoHandler } from 'mediahook/hono';

export interface ExampleOptions {
  /** Where result files go, and receipts (in its `.mediahook` folder). Default `./callbacks`. */
  out?: string;
  /** `whsec_…` secret(s); default from WEBHOOK_SECRET (several separated by spaces). */
  secret?: string | string[];
  /** Where the one line per callback goes. Default stderr. */
  log?: (line: string) => void;
}

/** The app (serve `app.fetch`) and its receiver (close it after the server). */
export function createApp(options: ExampleOptions = {}): { app: Hono; receiver: Receiver } {
  const log = options.log ?? ((line: string) => console.error(line));
  const receiver = createReceiver({
    out: options.out ?? './callbacks',
    secret: options.secret ?? secretsFromEnv(),
    onSuccess: (callback) =>
      log(
        `${callback.id_gen}: ${callback.file.mediaType}, ${callback.file.bytes} bytes → ${callback.file.path}`,
      ),
    onError: (callback) => log(`${callback.id_gen}: failed: ${callback.message}`),
  });
  const app = new Hono();
  app.all('/callbacks', honoHandler(receiver));
  app.get('/receipts', async (c) => c.json(await receiver.store.list({ limit: 20 })));
  return { app, receiver };
}

function secretsFromEnv(): string[] | undefined {
  const secrets = process.env.WEBHOOK_SECRET?.split(/\s+/).filter(Boolean) ?? [];
  return secrets.length > 0 ? secrets : undefined;
}

// Listen only when run as a program, so tests can import createApp and pick their own port.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { app, receiver } = createApp();
  const hostname = process.env.HOST ?? '127.0.0.1';
  const server = serve(
    { fetch: app.fetch, port: Number(process.env.PORT ?? 9000), hostname },
    (info: AddressInfo) => {
      console.error(`receiving callbacks on http://${hostname}:${info.port}/callbacks`);
    },
  );
  // A sender that asks `Expect: 100-continue` (curl, for large files) learns of a refusal
  // (too large, unsigned) before it uploads the file.
  deferContinue(server, '/callbacks');
  const stop = () => server.close(() => void receiver.close());
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
