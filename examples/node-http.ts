/**
 * Receiving result callbacks with plain `node:http`.
 *
 *   PORT=9000 WEBHOOK_SECRET=whsec_… npx tsx examples/node-http.ts
 *
 * Callbacks go to POST http://127.0.0.1:9000/callbacks; result files land in ./callbacks.
 * WEBHOOK_SECRET may list several secrets separated by spaces, for a rotation. HOST=0.0.0.0
 * accepts callbacks from other machines.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { createReceiver, deferContinue, nodeHandler, type Receiver } from 'mediahook';

export interface ExampleOptions {
  /** Where result files go, and receipts (in its `.mediahook` folder). Default `./callbacks`. */
  out?: string;
  /** `whsec_…` secret(s); default from WEBHOOK_SECRET. Unset: signatures are not checked. */
  secret?: string | string[];
  /** Where the one line per callback goes. Default stderr. */
  log?: (line: string) => void;
}

/** The server, not yet listening, and its receiver (close it after the server). */
export function createApp(options: ExampleOptions = {}): { server: Server; receiver: Receiver } {
  const log = options.log ?? ((line: string) => console.error(line));
  const receiver = createReceiver({
    out: options.out ?? './callbacks',
    secret: options.secret ?? secretsFromEnv(),
    onSuccess: (callback) => {
      // Runs once per id_gen; throw here (say, the database is down) and the sender retries later.
      log(
        `${callback.id_gen}: ${callback.file.mediaType}, ${callback.file.bytes} bytes → ${callback.file.path}`,
      );
    },
    onError: (callback) => log(`${callback.id_gen}: failed: ${callback.message}`),
  });
  const handle = nodeHandler(receiver);
  const notFound = (res: ServerResponse) =>
    res.writeHead(404, { 'content-type': 'text/plain' }).end('POST callbacks to /callbacks\n');
  // The path alone: a webhook URL may carry a query string of the client's own.
  const isCallback = (req: IncomingMessage) =>
    req.method === 'POST' && (req.url ?? '/').split('?', 1)[0] === '/callbacks';
  const server = createServer((req, res) => (isCallback(req) ? void handle(req, res) : notFound(res)));
  // A sender that asks `Expect: 100-continue` (curl, for large files) learns of a refusal
  // (too large, unsigned) before it uploads the file.
  deferContinue(server, '/callbacks');
  // Bytes that are not HTTP (a body longer than its Content-Length, say) are answered 500 with
  // a code, and a callback being processed keeps its own answer, instead of Node's bare 400.
  server.on('clientError', handle.clientError);
  return { server, receiver };
}

function secretsFromEnv(): string[] | undefined {
  const secrets = process.env.WEBHOOK_SECRET?.split(/\s+/).filter(Boolean) ?? [];
  return secrets.length > 0 ? secrets : undefined;
}

// Listen only when run as a program, so tests can import createApp and pick their own port.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { server, receiver } = createApp();
  const host = process.env.HOST ?? '127.0.0.1';
  server.listen(Number(process.env.PORT ?? 9000), host, () => {
    const { port } = server.address() as AddressInfo;
    console.error(`receiving callbacks on http://${host}:${port}/callbacks`);
  });
  const stop = () => server.close(() => void receiver.close());
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
