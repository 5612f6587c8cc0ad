/**
 * Receiving result callbacks in an Express 5 app.
 *
 *   PORT=9000 WEBHOOK_SECRET=whsec_… npx tsx examples/express.ts
 *
 * Callbacks go to POST http://127.0.0.1:9000/callbacks; result files land in ./callbacks.
 * The app also parses JSON for its other routes: express.json() leaves multipart alone, so it
 * can stay global. A parser that reads multipart itself (multer, say) must not run on this path.
 */
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import express, { type Express } from 'express';
import { createReceiver, deferContinue, type Receiver } from 'mediahook';
import { expressHandler } from 'mediahook/express';

export interface ExampleOptions {
  /** Where result files go, and receipts (in its `.mediahook` folder). Default `./callbacks`. */
  out?: string;
  /** `whsec_…` secret(s); default from WEBHOOK_SECRET (several separated by spaces). */
  secret?: string | string[];
  /** Where the one line per callback goes. Default stderr. */
  log?: (line: string) => void;
}

/** The app, not yet listening, and its receiver (close it after the server). */
export function createApp(options: ExampleOptions = {}): { app: Express; receiver: Receiver } {
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
  const app = express();
  app.use(express.json());
  app.all('/callbacks', expressHandler(receiver));
  app.get('/receipts', async (_req, res) => {
    res.json(await receiver.store.list({ limit: 20 }));
  });
  return { app, receiver };
}

function secretsFromEnv(): string[] | undefined {
  const secrets = process.env.WEBHOOK_SECRET?.split(/\s+/).filter(Boolean) ?? [];
  return secrets.length > 0 ? secrets : undefined;
}

// Listen only when run as a program, so tests can import createApp and pick their own port.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { app, receiver } = createApp();
  const host = process.env.HOST ?? '127.0.0.1';
  const server = app.listen(Number(process.env.PORT ?? 9000), host, () => {
    const { port } = server.address() as AddressInfo;
    console.error(`receiving callbacks on http://${host}:${port}/callbacks`);
  });
  // A sender that asks `Expect: 100-continue` (curl, for large files) learns of a refusal
  // (too large, unsigned) before it uploads the file.
  deferContinue(server, '/callbacks');
  const stop = () => server.close(() => void receiver.close());
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
