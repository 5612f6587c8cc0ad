import { existsSync } from 'node:fs';
import { KeptRequests } from '../web/kept-requests.ts';
import { sendKept } from '../web/kept-sending.ts';
import {
  type CliIo,
  type Command,
  durationFlag,
  escapeControls,
  jsonLine,
  parseCommandArgs,
  secretFlags,
  urlArgument,
  UsageError,
} from './command.ts';
import { displayUrl } from './post-callback.ts';

const USAGE = `Usage: mediahook replay DIR [--id ID] URL [options]

Sends callbacks that \`mediahook listen --out DIR\` kept (DIR/.requests) to URL again, byte-exact:
the same body and Content-Type, and the same webhook-* headers, or fresh signatures with
--secret (same webhook-id, a new timestamp). All of them, oldest first, or the one of --id.
Prints one line per callback.

Options:
  --id ID            the kept request to send (its id is in listen's inspector and DIR/.requests)
  --secret whsec_…   sign afresh with this secret (repeatable: one signature per secret)
  --timeout DUR      how long URL may take to answer once the body is sent (default 30s)
  --json             print one NDJSON record per callback on stdout
  --help, -h         show this help

Exit status: 0 when every callback got a 2xx answer; 1 otherwise, or when there is nothing
to send; 2 on wrong usage.
`;

async function run(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, {
    id: { type: 'string' },
    secret: { type: 'string', multiple: true },
    timeout: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (positionals.length < 2)
    throw new UsageError('give the directory listen kept callbacks in, then the URL');
  const [dir, ...rest] = positionals as [string, ...string[]];
  const url = urlArgument(rest);
  const target = {
    url,
    secrets: secretFlags(values.secret),
    timeoutMs: durationFlag('--timeout', values.timeout, 30_000, { min: 1 }),
  };
  const kept = new KeptRequests(dir);
  if (!existsSync(kept.directory)) {
    io.stderr.write(`mediahook replay: ${kept.directory} does not exist: no callback was kept in ${dir}\n`);
    return 1;
  }
  const all = await kept.list();
  const chosen = values.id === undefined ? all : all.filter((request) => request.id === values.id);
  if (chosen.length === 0) {
    const what = values.id === undefined ? 'no kept callback' : `no kept callback ${values.id}`;
    io.stderr.write(`mediahook replay: ${escapeControls(what)} in ${kept.directory}\n`);
    return 1;
  }
  let failed = 0;
  for (const request of chosen) {
    const result = await sendKept(kept, request, target);
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    if (!ok) failed += 1;
    if (values.json) {
      const { id, idGen, bytes } = request;
      io.stdout.write(
        jsonLine({
          id,
          id_gen: idGen,
          bytes,
          status: result.status,
          ms: result.ms,
          code: result.failure?.code ?? null,
        }),
      );
      continue;
    }
    const answer = result.failure
      ? `${result.failure.code}: ${result.failure.message}`
      : `HTTP ${result.status}`;
    io.stdout.write(
      `${escapeControls(`${request.id}  id_gen=${request.idGen}  ${request.bytes} B → ${answer}`)}  (${result.ms} ms)\n`,
    );
  }
  if (!values.json) {
    io.stderr.write(
      `mediahook replay: ${chosen.length - failed} of ${chosen.length} answered 2xx by ${displayUrl(url)}\n`,
    );
  }
  return failed === 0 ? 0 : 1;
}

/**
 * `mediahook replay`: kept callbacks sent again.
 *
 * @example
 * // mediahook replay ./callbacks http://127.0.0.1:3000/webhooks --secret whsec_…
 * await replayCommand.run(['./callbacks', 'http://127.0.0.1:3000/webhooks'], io);
 */
export const replayCommand: Command = { usage: USAGE, run };
