import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, rm, rmdir, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { FAMILIES, isFamily } from '../protocol/index.ts';
import { listenLineOf, listenRecordOf } from '../web/listen-record.ts';
import { isLoopbackAddress } from '../web/inspector-access.ts';
import type { SendTarget } from '../web/kept-sending.ts';
import { createListenServer } from '../web/listen-server.ts';
import { fileModesOf, makeDirectorySync } from '../receiver/file-modes.ts';
import { hostHint, oncePerHost, RECEIPTS_FOLDER } from '../receiver/index.ts';
import {
  allowedHostFlags,
  allowOriginFlags,
  type CliIo,
  type Command,
  durationFlag,
  escapeControls,
  jsonLine,
  modeFlag,
  parseCommandArgs,
  portFlag,
  secretFlags,
  sizeFlag,
  urlArgument,
  UsageError,
} from './command.ts';
import { displayUrl } from './post-callback.ts';
import { untilSignal } from './signals.ts';

/** Where `--forward-to` sends, checked: a URL, and `--forward-secret` only with `--secret`. */
function forwardTargetOf(
  values: { 'forward-to'?: string; 'forward-secret'?: string[]; 'forward-timeout'?: string },
  secrets: readonly string[],
): SendTarget | undefined {
  const forwardSecrets = secretFlags(values['forward-secret']);
  if (values['forward-to'] === undefined) {
    if (forwardSecrets.length > 0 || values['forward-timeout'] !== undefined) {
      throw new UsageError('--forward-secret and --forward-timeout go with --forward-to');
    }
    return undefined;
  }
  if (forwardSecrets.length > 0 && secrets.length === 0) {
    throw new UsageError(
      '--forward-secret needs --secret: only a callback whose signature was checked is signed again',
    );
  }
  return {
    url: urlArgument([values['forward-to']]),
    secrets: forwardSecrets,
    timeoutMs: durationFlag('--forward-timeout', values['forward-timeout'], 30_000, { min: 1 }),
    // Unique to this process: a --forward-to that leads back here is found on the first lap.
    via: `1.1 mediahook-listen-${randomBytes(6).toString('hex')}`,
  };
}

/** A count flag's value: decimal digits; `fallback` when absent. */
function countFlag(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d{1,9}$/.test(value)) throw new UsageError(`${flag} takes a whole number, not "${value}"`);
  return Number(value);
}

const USAGE = `Usage: mediahook listen [options]

Receives callbacks: validates each one strictly, checks its signature when a secret is set,
stores the file in --out (atomically, once per id_gen) and prints one line per request.
Every POST, at any path but /.mediahook/, is a callback; GET / is the inspector page, shown to
clients on this machine (loopback) only unless --inspector-open is given.
With --forward-to, each accepted callback is sent on to your app, and the sender gets its answer.

Options:
  --port N                 port to listen on (default 9000; 0 picks a free one)
  --host ADDR              address to bind (default 127.0.0.1)
  --out DIR                where files go, receipts in DIR/.mediahook (default ./callbacks)
  --secret whsec_…         require a valid signature; repeat the flag to accept several secrets
  --json                   print one NDJSON record per request on stdout
  ${`--family ${FAMILIES.join('|')}`.padEnd(24)} accept one family only
  --max-file-size SIZE     largest result file (default 1GiB)
  --max-text-size SIZE     largest text part (default 64KiB)
  --max-header-size SIZE   largest part header block (default 16KiB)
  --idle-timeout DUR       fail an upload that sends nothing for this long (default 30s)
  --min-upload-rate SIZE   fail an upload slower than SIZE a second over 30s (default 1KiB; 0: off)
  --request-timeout DUR    fail an upload not whole this long after it began (default 1h; 0s: off)
  --tolerance DUR          signature timestamp tolerance (default 5m)
  --allowed-host NAME      answer requests for this Host name too (repeatable; .example.com for
                           it and its subdomains; * for any); by default only IP addresses and
                           localhost are answered, against DNS rebinding (a tunnel needs its name)
  --allow-origin ORIGIN    take callbacks that a browser page of this origin posts (repeatable);
                           by default a request with an Origin header is refused
  --forward-to URL         send every accepted callback on to URL, byte-exact; the sender gets the
                           app's 2xx as 200, anything else as 500 (forward_failed: no answer)
  --forward-secret whsec_… sign what is forwarded afresh (same webhook-id, new timestamp);
                           needs --secret: nothing unverified is ever signed again
  --forward-timeout DUR    how long the app may take to answer once the body is sent (default 30s)
  --keep-requests N        keep the raw request of the last N accepted callbacks, for replay, in
                           DIR/.requests (default 100; 0 keeps none)
  --keep-bytes SIZE        at most SIZE of kept requests in all, oldest evicted first (default 1GiB)
  --file-mode MODE         mode of the files it stores (default 0600; 0640 lets a group read)
  --dir-mode MODE          mode of the directories it creates (default 0700; 0750 with 0640)
  --inspector-open         show the inspector, /requests.json and stored files to every client,
                           not only to loopback ones (callbacks are taken from anywhere either way)
  --help, -h               show this help

Runs until SIGINT or SIGTERM. Exit status: 0 after a signal; 1 when it cannot listen, or cannot
write to --out (checked at start); 2 on wrong usage.
`;

export const listenCommand: Command = {
  usage: USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseCommandArgs(argv, {
      port: { type: 'string' },
      host: { type: 'string' },
      out: { type: 'string' },
      secret: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      family: { type: 'string' },
      'max-file-size': { type: 'string' },
      'max-text-size': { type: 'string' },
      'max-header-size': { type: 'string' },
      'idle-timeout': { type: 'string' },
      'min-upload-rate': { type: 'string' },
      'request-timeout': { type: 'string' },
      tolerance: { type: 'string' },
      'allowed-host': { type: 'string', multiple: true },
      'allow-origin': { type: 'string', multiple: true },
      'file-mode': { type: 'string' },
      'dir-mode': { type: 'string' },
      'forward-to': { type: 'string' },
      'forward-secret': { type: 'string', multiple: true },
      'forward-timeout': { type: 'string' },
      'keep-requests': { type: 'string' },
      'keep-bytes': { type: 'string' },
      'inspector-open': { type: 'boolean' },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const port = portFlag('--port', values.port, 9000);
    if (values.family !== undefined && !isFamily(values.family)) {
      throw new UsageError(`--family takes ${FAMILIES.join(' or ')}`);
    }
    const secrets = secretFlags(values.secret);
    const forwardTo = forwardTargetOf(values, secrets);
    const keep = {
      maxRequests: countFlag('--keep-requests', values['keep-requests'], 100),
      maxBytes: sizeFlag('--keep-bytes', values['keep-bytes']) ?? 2 ** 30,
    };
    const limits = {
      fileBytes: sizeFlag('--max-file-size', values['max-file-size']),
      textBytes: sizeFlag('--max-text-size', values['max-text-size']),
      headerBytes: sizeFlag('--max-header-size', values['max-header-size']),
    };
    const json = values.json === true;
    const hostHinted = oncePerHost((host, last) =>
      io.stderr.write(`mediahook listen: ${escapeControls(hostHint(host, '--allowed-host', last))}\n`),
    );
    const out = values.out ?? 'callbacks';
    const modes = {
      fileMode: modeFlag('--file-mode', values['file-mode'], 'file'),
      dirMode: modeFlag('--dir-mode', values['dir-mode'], 'dir'),
    };
    const unwritable = await unwritableReason(out, modes);
    if (unwritable !== null) {
      io.stderr.write(
        `mediahook listen: cannot write to --out ${escapeControls(out)}: ${escapeControls(unwritable)}\n`,
      );
      return 1;
    }
    const listen = createListenServer({
      ...modes,
      inspectorOpen: values['inspector-open'] === true,
      allowedHosts: allowedHostFlags(values['allowed-host']),
      onHostRefused: hostHinted,
      allowedOrigins: allowOriginFlags(values['allow-origin']),
      out,
      secret: secrets,
      family: values.family,
      limits: Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined)),
      idleTimeoutMs: durationFlag('--idle-timeout', values['idle-timeout'], 30_000),
      minBytesPerSecond:
        values['min-upload-rate']?.trim() === '0'
          ? 0
          : sizeFlag('--min-upload-rate', values['min-upload-rate']),
      requestTimeoutMs: durationFlag('--request-timeout', values['request-timeout'], 3_600_000),
      toleranceSeconds: durationFlag('--tolerance', values.tolerance, 300_000, { min: 1000 }) / 1000,
      keep,
      forwardTo,
      onOutcome(outcome) {
        // What the sender wrote is shown, never obeyed: no forged line, no terminal escape.
        io.stdout.write(
          json ? jsonLine(listenRecordOf(outcome)) : `${escapeControls(listenLineOf(outcome))}\n`,
        );
      },
    });
    listen.server.listen(port, values.host ?? '127.0.0.1');
    try {
      await once(listen.server, 'listening');
    } catch (error) {
      io.stderr.write(`mediahook listen: cannot listen on port ${port}: ${(error as Error).message}\n`);
      await listen.receiver.close();
      return 1;
    }
    // Handlers first: whoever reads the ready line may signal at once.
    const stopped = untilSignal();
    const address = listen.server.address() as AddressInfo;
    const signing = secrets.length > 0 ? 'signed callbacks only' : 'no secret: signatures not checked';
    const forwarding = forwardTo ? `; forwarding to ${displayUrl(forwardTo.url)}` : '';
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    // Bound beyond loopback, others can reach it: say who sees what arrived.
    const inspector =
      values['inspector-open'] === true
        ? '; inspector open to every client'
        : isLoopbackAddress(address.address)
          ? ''
          : '; inspector for loopback clients only';
    io.stderr.write(
      `mediahook listen: receiving at http://${host}:${address.port}/ (files in ${listen.receiver.out}; ${signing}${inspector}${forwarding})\n`,
    );
    const signal = await stopped;
    io.stderr.write(`mediahook listen: ${signal}, stopping\n`);
    await listen.close();
    return 0;
  },
};

/**
 * Why callbacks could not be stored in `out`, or null: a file is created and removed where the
 * receiver writes them and where it keeps their receipts, before anything opens. Without the
 * check, an --out it cannot write would start and answer every callback 500.
 */
async function unwritableReason(
  out: string,
  modes: { fileMode: number | undefined; dirMode: number | undefined },
): Promise<string | null> {
  try {
    makeDirectorySync(out, fileModesOf(modes));
    await writeAndRemove(out);
    const receipts = join(out, RECEIPTS_FOLDER);
    // Made for the check only, it goes again: the receipts' store makes it when it needs it.
    const made = await mkdir(receipts, { recursive: true, mode: 0o700 });
    await writeAndRemove(receipts);
    if (made !== undefined) await rmdir(receipts);
    return null;
  } catch (error) {
    if (error instanceof Error && 'syscall' in error) return error.message;
    throw error;
  }
}

/** Creates and removes an empty file in `folder`. */
async function writeAndRemove(folder: string): Promise<void> {
  const probe = join(folder, `.write-check-${randomUUID()}`);
  await writeFile(probe, '', { flag: 'wx', mode: 0o600 });
  await rm(probe);
}
