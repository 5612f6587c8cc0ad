/**
 * Receiving result callbacks in a Fastify 5 app.
 *
 *   PORT=9000 WEBHOOK_SECRET=whsec_… npx tsx examples/fastify.ts
 *
 * Callbacks go to POST http://127.0.0.1:9000/callbacks; result files land in ./callbacks.
 * The plugin passes bodies through unparsed inside its own scope only; the rest of the app
 * keeps Fastify's JSON parsing.
 */
import { pathToFileURL } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { createReceiver } from 'mediahook';
import { fastifyReceiver } from 'mediahook/fastify';

export interface ExampleOptions {
  /** Where result files go, and receipts (in its `.mediahook` folder). Default `./callbacks`. */
  out?: string;
  /** `whsec_…` secret(s); default from WEBHOOK_SECRET (several separated by spaces). */
  secret?: string | string[];
  /** Where the one line per callback goes. Default stderr. */
  log?: (line: string) => void;
}

/** The app, not yet listening; `app.close()` also closes the receiver. */
export async function createApp(options: ExampleOptions = {}): Promise<FastifyInstance> {
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
  const app = Fastify();
  app.addHook('onClose', () => receiver.close());
  await app.register(fastifyReceiver, { receiver, path: '/callbacks' });
  app.get('/receipts', () => receiver.store.list({ limit: 20 }));
  return app;
}

function secretsFromEnv(): string[] | undefined {
  const secrets = process.env.WEBHOOK_SECRET?.split(/\s+/).filter(Boolean) ?? [];
  return secrets.length > 0 ? secrets : undefined;
}

// Listen only when run as a program, so tests can import createApp and pick their own port.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const app = await createApp();
  const host = process.env.HOST ?? '127.0.0.1';
  const address = await app.listen({ port: Number(process.env.PORT ?? 9000), host });
  console.error(`receiving callbacks on ${address}/callbacks`);
  const stop = () => void app.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
