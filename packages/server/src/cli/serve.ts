import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createApiServer } from '../service/api-http-server.ts';
import { createService } from '../service/service.ts';
import {
  allowedHostFlags,
  allowOriginFlags,
  type CliIo,
  type Command,
  durationFlag,
  parseCommandArgs,
  portFlag,
  sizeFlag,
  untilSignal,
  UsageError,
} from 'mediahook/internal';
import { SERVICE_FLAG_OPTIONS, SERVICE_FLAG_USAGE, serviceOptionsOf, serviceSetup } from './service-flags.ts';

const USAGE = `Usage: mediahook serve [options]

Runs the generation service: the API (/v1/operations), the generators, the delivery worker
and the dashboard at /. Without API keys (mediahook keys create --client NAME) it binds to loopback only.

Options:
  --port N                port (default 8080; 0 picks a free one)
  --host ADDR             address to bind (default 127.0.0.1; another needs an API key)
  --no-worker             serve the API only; run \`mediahook worker\` processes instead
  --allowed-host NAME     answer requests for this Host name too (repeatable; .example.com for
                          it and its subdomains; * for any); by default only IP addresses and
                          localhost are answered, against DNS rebinding (a proxy's name needs it)
  --allow-origin ORIGIN   let pages of this origin POST to the API and read its answers (CORS),
                          e.g. a browser app with a key (repeatable); by default another site's
                          POST is refused, key or not
  --idle-timeout DUR      answer 408 to a hand-in (POST /v1/callbacks) whose body sends nothing
                          for this long (default 30s)
  --min-upload-rate SIZE  answer 408 to a hand-in slower than SIZE a second over 30s
                          (default 64KiB; 0: off)
${SERVICE_FLAG_USAGE}`;

/** `serve`'s flags: the shared ones and those of its own (`doctor` takes them all too). */
export const SERVE_FLAG_OPTIONS = {
  ...SERVICE_FLAG_OPTIONS,
  port: { type: 'string' },
  host: { type: 'string' },
  'no-worker': { type: 'boolean' },
  'allowed-host': { type: 'string', multiple: true },
  'allow-origin': { type: 'string', multiple: true },
  'idle-timeout': { type: 'string' },
  'min-upload-rate': { type: 'string' },
} as const;

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

export const serveCommand: Command = {
  usage: USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseCommandArgs(argv, SERVE_FLAG_OPTIONS);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const port = portFlag('--port', values.port, 8080);
    const allowedHosts = allowedHostFlags(values['allowed-host']);
    const allowedOrigins = allowOriginFlags(values['allow-origin']);
    const minRate = values['min-upload-rate'];
    const uploadGuards = {
      idleTimeoutMs: durationFlag('--idle-timeout', values['idle-timeout'], 30_000),
      minBytesPerSecond: minRate?.trim() === '0' ? 0 : sizeFlag('--min-upload-rate', minRate),
    };
    const setup = await serviceSetup(values, io);
    if (setup === null) return 1;
    const host = values.host ?? '127.0.0.1';
    if (!LOOPBACK.test(host) && (await setup.store.countApiKeys()) === 0) {
      await setup.store.close();
      await setup.blobs.close();
      io.stderr.write(
        `mediahook serve: refusing to bind ${host} without an API key; create one with 'mediahook keys create --client NAME --admin'\n`,
      );
      return 1;
    }
    const service = createService({
      ...serviceOptionsOf(setup),
      workers: values['no-worker'] !== true,
      allowedHosts,
      allowedOrigins,
      uploadGuards,
    });
    // A single embedded process restarting: whatever it held before is its own to take back.
    if (!setup.store.sharedByProcesses) await setup.store.recoverLeases();
    await service.start();
    const server = createApiServer(service.handler);
    server.listen(port, host);
    try {
      await once(server, 'listening');
    } catch (error) {
      io.stderr.write(`mediahook serve: cannot listen on ${host}:${port}: ${(error as Error).message}\n`);
      await service.stop();
      await setup.store.close();
      await setup.blobs.close();
      return 1;
    }
    const stopped = untilSignal();
    const address = server.address() as AddressInfo;
    const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    io.stderr.write(
      `mediahook serve: listening at http://${shown}:${address.port}/ (data in ${setup.dataDir})\n`,
    );
    const signal = await stopped;
    io.stderr.write(`mediahook serve: ${signal}, stopping\n`);
    // The store closes last: requests in flight and the workers still use it until they end.
    await Promise.all([service.closeServer(server), service.stop()]);
    await setup.store.close();
    await setup.blobs.close();
    return 0;
  },
};
