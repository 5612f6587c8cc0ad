import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { builtInGenerator } from '../service/generators/index.ts';
import { createApiServer } from '../service/api-http-server.ts';
import { createService } from '../service/service.ts';
import type { OperationResource } from '../store/index.ts';
import {
  allowedHostFlags,
  allowOriginFlags,
  type CliIo,
  type Command,
  createListenServer,
  durationFlag,
  escapeControls,
  hostHint,
  listenLineOf,
  oncePerHost,
  parseCommandArgs,
  portFlag,
  untilSignal,
  UsageError,
} from 'mediahook/internal';
import { checkBeforeStart } from './start-checks.ts';

const USAGE = `Usage: mediahook demo [--port 8080] [--receiver-port 9000] [--data DIR] [--blobs DIR|s3://…] [--exit] [--timeout 2m]
                     [--allowed-host NAME]… [--allow-origin ORIGIN]…

The whole loop in one process: the service, a receiver, and three operations (a JPEG and an
MP4 in family A, an error in family B), signed callbacks included. Prints where to look.

Options:
  --port N               the service's port (default 8080; a free one if taken)
  --receiver-port N      the receiver's port (default 9000; a free one if taken)
  --data DIR             where everything is kept (default: a new temporary directory)
  --blobs DIR|s3://BUCKET/PREFIX  where result files are kept (default DATA/service/results)
  --exit                 exit once the three callbacks arrived (0) or the timeout passed (1)
  --timeout DUR          how long --exit waits (default 2m)
  --allowed-host NAME    let both servers answer this Host name too (repeatable; .example.com
                         for it and its subdomains; * for any); by default only IP addresses
                         and localhost are answered, against DNS rebinding
  --allow-origin ORIGIN  let pages of this origin POST to the service's API and post callbacks
                         to the receiver (repeatable); by default both refuse other sites' pages
`;

async function listenOn(server: Server, port: number): Promise<number> {
  for (const candidate of [port, 0]) {
    server.listen(candidate, '127.0.0.1');
    try {
      await once(server, 'listening');
      return (server.address() as AddressInfo).port;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || candidate === 0) throw error;
    }
  }
  throw new Error('no port');
}

const OPERATIONS = [
  { kind: 'image', family: 'A', prompt: 'a lighthouse at dawn' },
  { kind: 'video', family: 'A', prompt: 'waves rolling in' },
  {
    kind: 'image',
    family: 'B',
    prompt: 'a cat astronaut',
    fail_with: 'the model refused this prompt (demo)',
  },
] as const;

export const demoCommand: Command = {
  usage: USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseCommandArgs(argv, {
      port: { type: 'string' },
      'receiver-port': { type: 'string' },
      data: { type: 'string' },
      blobs: { type: 'string' },
      exit: { type: 'boolean' },
      timeout: { type: 'string' },
      'allowed-host': { type: 'string', multiple: true },
      'allow-origin': { type: 'string', multiple: true },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const allowedHosts = allowedHostFlags(values['allowed-host']);
    const allowedOrigins = allowOriginFlags(values['allow-origin']);
    const timeoutMs = durationFlag('--timeout', values.timeout, 120_000, { min: 1000 });
    // Read before anything listens: a wrong flag must not leave the receiver running.
    const wantedReceiverPort = portFlag('--receiver-port', values['receiver-port'], 9000);
    const wantedApiPort = portFlag('--port', values.port, 8080);
    const dataDir = values.data ?? (await mkdtemp(join(tmpdir(), 'mediahook-demo-')));
    const secret = `whsec_${randomBytes(24).toString('base64')}`;

    const serviceDir = join(dataDir, 'service');
    // Checked before anything listens: a demo that cannot run holds no port.
    const checked = await checkBeforeStart(
      {
        db: join(serviceDir, 'mediahook.sqlite'),
        dbGiven: false,
        dataDir: serviceDir,
        blobs: values.blobs,
        generatorProgram: undefined,
      },
      ['database', 'blobs', 'generator'],
      io,
    );
    if (checked === null) {
      // A directory the demo made for itself is of no use to anyone once it cannot run.
      if (values.data === undefined) await rm(dataDir, { recursive: true, force: true });
      return 1;
    }
    const { store } = checked;
    const blobs = checked.blobs!;
    const received = new Set<string>();
    const receiver = createListenServer({
      out: join(dataDir, 'received'),
      secret,
      allowedHosts,
      allowedOrigins,
      onHostRefused: oncePerHost((host, last) =>
        io.stderr.write(`receiver  ${escapeControls(hostHint(host, '--allowed-host', last))}\n`),
      ),
      onOutcome(outcome) {
        io.stdout.write(`receiver  ${escapeControls(listenLineOf(outcome))}\n`);
        if (outcome.callback && outcome.verdict !== 'rejected') received.add(outcome.callback.id_gen);
      },
    });
    const service = createService({
      store,
      dataDir: serviceDir,
      blobs,
      generator: builtInGenerator(),
      secrets: [secret],
      // The receiver is on this machine, on loopback: the SSRF guard must let it through.
      ssrf: { allowPrivate: true },
      retrySchedule: [1000, 2000, 5000],
      allowedHosts,
      allowedOrigins,
      // Quiet but for the hint to a refused Host, which a person trying the demo needs.
      log: (_level, event, fields) => {
        if (event === 'host_not_allowed')
          io.stderr.write(`service   ${escapeControls(String(fields?.['hint']))}\n`);
      },
    });
    const api = createApiServer(service.handler);
    // Whatever goes wrong from here on, both ports are let go and the store is closed.
    try {
      const receiverPort = await listenOn(receiver.server, wantedReceiverPort);
      await service.start();
      const apiPort = await listenOn(api, wantedApiPort);
      return await runDemo(io, {
        apiUrl: `http://127.0.0.1:${apiPort}`,
        receiverUrl: `http://127.0.0.1:${receiverPort}`,
        dataDir,
        secret,
        received,
        timeoutMs,
        exit: values.exit === true,
      });
    } finally {
      // Requests in flight get their answers (within the grace) before the store closes.
      await Promise.all([api.listening ? service.closeServer(api) : undefined, service.stop()]);
      await store.close();
      await blobs.close();
      await receiver.close();
    }
  },
};

interface DemoRun {
  apiUrl: string;
  receiverUrl: string;
  dataDir: string;
  secret: string;
  received: ReadonlySet<string>;
  timeoutMs: number;
  exit: boolean;
}

/** Queues the three operations, waits for their callbacks, and (without --exit) for a signal. */
async function runDemo(io: CliIo, demo: DemoRun): Promise<number> {
  const { apiUrl, receiverUrl, dataDir, secret, received, timeoutMs } = demo;
  const stopped = untilSignal();
  io.stderr.write(
    [
      'mediahook demo',
      `  service dashboard   ${apiUrl}/`,
      `  service API         ${apiUrl}/v1/operations   (OpenAPI: ${apiUrl}/openapi.json)`,
      `  receiver inspector  ${receiverUrl}/`,
      `  received files      ${join(dataDir, 'received')}`,
      '',
    ].join('\n'),
  );

  const ids: string[] = [];
  for (const operation of OPERATIONS) {
    const response = await request(`${apiUrl}/v1/operations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...operation, webhook_url: `${receiverUrl}/callbacks` }),
    });
    const created = (await response.body.json()) as OperationResource;
    ids.push(created.id_gen);
    io.stdout.write(`service   queued ${operation.kind} in family ${operation.family}: ${created.id_gen}\n`);
  }

  const deadline = Date.now() + timeoutMs;
  let allArrived = false;
  while (!allArrived && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    allArrived = ids.every((id) => received.has(id));
  }
  io.stderr.write(
    allArrived
      ? `\nAll three callbacks arrived. Start another, with your own endpoint as webhook_url if you like:\n  curl -X POST ${apiUrl}/v1/operations -H 'content-type: application/json' \\\n    -d '{"kind":"image","family":"A","prompt":"hello","webhook_url":"${receiverUrl}/callbacks"}'\nCallbacks are signed with ${secret} (give your receiver that secret, or none).\n`
      : `\nNot every callback arrived within ${timeoutMs / 1000} s; see the dashboard.\n`,
  );
  if (!demo.exit) {
    io.stderr.write('Press Ctrl-C to stop.\n');
    await stopped;
  }
  return allArrived || !demo.exit ? 0 : 1;
}
