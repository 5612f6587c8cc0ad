import { open } from 'node:fs/promises';
import { uuidv7 } from '../protocol/uuidv7.ts';
import {
  BodySigner,
  DEFAULT_LIMITS,
  encodeCallback,
  FAMILIES,
  FAMILY_PARTS,
  type Family,
  familiesCarrying,
  familyMediaProblem,
  isFamily,
  type MediaType,
  type OutgoingCallback,
  SNIFF_BYTES,
  sniffMediaType,
} from '../protocol/index.ts';
import {
  type CliIo,
  type Command,
  durationFlag,
  escapeControls,
  jsonLine,
  parseCommandArgs,
  secretFlags,
  UsageError,
  urlArgument,
} from './command.ts';
import { displayUrl, PostError, type PostResult, postCallback } from './post-callback.ts';
import { formatBytes, ProgressBar } from './progress.ts';
import { isSampleName, readSample, SAMPLE_NAMES, type SampleName } from './send-samples.ts';

const FAMILY_FLAG = FAMILIES.join('|');

/** One help line per family, naming its success and error parts. */
const FAMILY_LINES = FAMILIES.map((family, index) => {
  const lead = index === 0 ? `  --family ${FAMILY_FLAG}` : '';
  return `${lead.padEnd(24)}${family}: parts ${FAMILY_PARTS[family].result} / ${FAMILY_PARTS[family].error}`;
}).join('\n');

const USAGE = `Usage: mediahook send URL --family ${FAMILY_FLAG} (--file PATH | --sample ${SAMPLE_NAMES.join('|')} | --message TEXT) [options]

Sends one result callback to URL as the service would, and prints the receiver's answer.
A file (or a built-in sample) makes a success callback, a message an error callback.

Options:
${FAMILY_LINES}
  --file PATH           the result: a JPEG, or an MP4 (family ${familiesCarrying('video/mp4').join(' or ')} only), told by its bytes
  --sample ${SAMPLE_NAMES.join('|').padEnd(12)}a built-in result instead of --file: a 160×90 JPEG (3 KB) or a
                        one-second 160×90 MP4 (7 KB, family ${familiesCarrying('video/mp4').join(' or ')} only)
  --message TEXT        the error text
  --status S            the status part (default: success with --file, error with --message)
  --id ID               the id_gen part, at most 256 bytes, also the webhook-id
                        (default: a new UUIDv7)
  --time T              the time_gen part (default: now, RFC 3339 UTC with milliseconds)
  --media-type TYPE     declare image/jpeg or video/mp4 whatever the bytes are
  --filename NAME       the file part's filename (default: <id_gen>.jpg or <id_gen>.mp4)
  --secret whsec_...    sign (Standard Webhooks); repeat it to send one signature per secret
  --connect-timeout D   give up connecting after D (default 10s)
  --timeout D           give up when the receiver stops reading the body, or has not
                        answered D after the body was sent (default 30s)
  --json                print one JSON line with the result instead of the answer
  --help, -h            show this help

Durations are written 200ms, 5s, 5m, 2h. Redirects are not followed.
Exit status: 0 when the receiver answers 2xx; 1 for any other answer, no answer, or a file
that is neither a JPEG nor an MP4; 2 for wrong usage.

Examples:
  mediahook send http://127.0.0.1:9000/hook --family A --sample jpeg
  mediahook send http://127.0.0.1:9000/hook --family A --file result.mp4
  mediahook send http://127.0.0.1:9000/hook --family B --message "prompt refused" \\
    --secret "whsec_$(openssl rand -base64 24)"
`;

const OPTIONS = {
  family: { type: 'string' },
  file: { type: 'string' },
  sample: { type: 'string' },
  message: { type: 'string' },
  status: { type: 'string' },
  id: { type: 'string' },
  time: { type: 'string' },
  'media-type': { type: 'string' },
  filename: { type: 'string' },
  secret: { type: 'string', multiple: true },
  'connect-timeout': { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** Everything `send` needs, checked: what the flags say, before any file is opened. */
interface SendPlan {
  url: URL;
  family: Family;
  filePath?: string | undefined;
  sample?: SampleName | undefined;
  message?: string | undefined;
  status?: string | undefined;
  id: string;
  time: string;
  declaredType?: MediaType | undefined;
  filename?: string | undefined;
  secrets: string[];
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  json: boolean;
}

function planFromArgs(argv: string[]): SendPlan {
  const { values, positionals } = parseCommandArgs(argv, OPTIONS);
  const url = urlArgument(positionals);
  const choices = FAMILIES.join(' or ');
  if (values.family === undefined) throw new UsageError(`--family is required: ${choices}`);
  const family = values.family.toUpperCase();
  if (!isFamily(family)) throw new UsageError(`--family is ${choices}, not "${values.family}"`);
  const given = [values.file, values.sample, values.message].filter((value) => value !== undefined);
  if (given.length !== 1) {
    throw new UsageError(
      'give exactly one of --file or --sample (a success callback) and --message (an error callback)',
    );
  }
  if (values.sample !== undefined && !isSampleName(values.sample)) {
    throw new UsageError(`--sample is ${SAMPLE_NAMES.join(' or ')}, not "${values.sample}"`);
  }
  if (values.sample === 'mp4' && !FAMILY_PARTS[family].mediaTypes.includes('video/mp4')) {
    throw new UsageError(
      `family ${family} carries image/jpeg only: use --sample jpeg, or --family ${familiesCarrying('video/mp4').join(' or ')}`,
    );
  }
  const success = values.file !== undefined || values.sample !== undefined;
  const declared = values['media-type'];
  if (declared !== undefined && declared !== 'image/jpeg' && declared !== 'video/mp4') {
    throw new UsageError(`--media-type is image/jpeg or video/mp4, not "${declared}"`);
  }
  if (declared !== undefined && !success) {
    throw new UsageError('--media-type goes with --file or --sample');
  }
  if (values.filename !== undefined && !success) {
    throw new UsageError('--filename goes with --file or --sample');
  }
  if (values.filename === '') throw new UsageError('--filename: the file part carries a filename, not ""');
  if (declared !== undefined && !FAMILY_PARTS[family].mediaTypes.includes(declared)) {
    throw new UsageError(`family ${family} carries ${FAMILY_PARTS[family].mediaTypes.join(' or ')} only`);
  }
  const secrets = secretFlags(values.secret);
  const id = values.id ?? uuidv7();
  if (id === '') throw new UsageError('--id: id_gen must not be empty');
  const idBytes = Buffer.byteLength(id);
  if (idBytes > DEFAULT_LIMITS.idGenBytes) {
    throw new UsageError(
      `--id: id_gen is at most ${DEFAULT_LIMITS.idGenBytes} bytes (receivers refuse more: text_too_large), not ${idBytes}`,
    );
  }
  if (secrets.length > 0 && !/^[\x20-\x7e]*$/.test(id)) {
    // Header bytes outside ASCII are read differently by different servers, and the
    // signature covers the id, so a signed id is kept to what every receiver reads alike.
    throw new UsageError(
      '--id: a signed callback repeats id_gen in the webhook-id header: printable ASCII only',
    );
  }
  if (secrets.length > 0 && /^ | $/.test(id)) {
    throw new UsageError(
      '--id: a signed callback repeats id_gen in the webhook-id header, which loses spaces at its ends: the signature could not be checked',
    );
  }
  return {
    url,
    family,
    filePath: values.file,
    sample: values.sample,
    message: values.message,
    status: values.status,
    id,
    time: values.time ?? new Date().toISOString(),
    declaredType: declared,
    filename: values.filename,
    secrets,
    connectTimeoutMs: durationFlag('--connect-timeout', values['connect-timeout'], 10_000, { min: 1 }),
    responseTimeoutMs: durationFlag('--timeout', values.timeout, 30_000, { min: 1 }),
    json: values.json ?? false,
  };
}

/** The media type a file's first bytes show; refuses what no receiver would accept. */
async function detectMediaType(path: string, family: Family): Promise<MediaType> {
  let head: Buffer;
  try {
    const handle = await open(path, 'r');
    try {
      if (!(await handle.stat()).isFile()) throw new Error(`${path} is not a regular file`);
      head = Buffer.alloc(SNIFF_BYTES);
      const { bytesRead } = await handle.read(head, 0, SNIFF_BYTES, 0);
      head = head.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw new Error(`cannot read the file: ${(error as Error).message}`);
  }
  const detected = sniffMediaType(head);
  if (detected === null) {
    throw new Error(
      `${path} is neither a JPEG (bytes FF D8 FF) nor an MP4 (an ftyp box at offset 4); receivers reject it`,
    );
  }
  const problem = familyMediaProblem(family, detected);
  if (problem !== undefined) {
    const noun = detected === 'video/mp4' ? 'an MP4' : 'a JPEG';
    throw new UsageError(
      `${path} is ${noun} and ${problem}: use --family ${familiesCarrying(detected).join(' or ')}`,
    );
  }
  return detected;
}

async function buildCallback(plan: SendPlan, io: CliIo): Promise<OutgoingCallback> {
  const common = { family: plan.family, id_gen: plan.id, time_gen: plan.time };
  if (plan.filePath === undefined && plan.sample === undefined) {
    return { ...common, event: 'error', status: plan.status ?? 'error', message: plan.message ?? '' };
  }
  const sample = plan.sample === undefined ? null : await readSample(plan.sample);
  const detected = sample ? sample.mediaType : await detectMediaType(plan.filePath!, plan.family);
  const mediaType = plan.declaredType ?? detected;
  if (mediaType !== detected) {
    io.stderr.write(
      `mediahook send: declaring ${mediaType} for bytes that are ${detected}; a receiver goes by the bytes (${detected}) and reports both types\n`,
    );
  }
  return {
    ...common,
    event: 'success',
    status: plan.status ?? 'success',
    file: sample ? sample.bytes : plan.filePath!,
    mediaType,
    ...(plan.filename === undefined ? {} : { filename: plan.filename }),
  };
}

/** Text of an answer body; on a terminal, with control characters shown as escapes. */
function displayBody(body: Buffer, forTerminal: boolean): string {
  if (body.includes(0)) return `(${body.length} bytes of binary data)`;
  const text = body.toString('utf8');
  return forTerminal ? escapeControls(text, true) : text;
}

function printAnswer(result: PostResult, io: CliIo): void {
  const line = escapeControls(`HTTP ${result.statusCode} ${result.statusText}`.trimEnd());
  io.stdout.write(`${line}\n`);
  if (result.body.length === 0) return;
  const text = displayBody(result.body, io.stdout.isTTY === true);
  io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  if (result.bodyTruncated) io.stdout.write(`… (answer cut after ${formatBytes(result.body.length)})\n`);
  else if (result.bodyLate) io.stdout.write(`… (the rest of the answer did not come within the timeout)\n`);
  else if (result.bodyCut) io.stdout.write(`… (the connection closed before the rest of the answer)\n`);
}

async function run(argv: string[], io: CliIo): Promise<number> {
  const plan = planFromArgs(argv);
  const callback = await buildCallback(plan, io);
  const encoded = await encodeCallback(callback);
  let headers: Record<string, string> | undefined;
  if (plan.secrets.length > 0) {
    // The signature covers the exact bytes, so the body is produced once to sign and once
    // more to send; the encoder re-reads the file rather than holding it.
    const signer = new BodySigner(plan.secrets, plan.id);
    for await (const chunk of encoded.body()) signer.update(chunk);
    headers = signer.headers();
  }
  const kind = callback.event === 'success' ? `success (${callback.mediaType})` : 'error';
  const summary = {
    url: displayUrl(plan.url),
    family: plan.family,
    event: callback.event,
    id_gen: plan.id,
    time_gen: plan.time,
    bytes: encoded.contentLength,
    signed: plan.secrets.length,
  };
  if (!plan.json) {
    io.stderr.write(
      `POST ${summary.url}: family ${plan.family} ${kind}, id_gen ${plan.id}, ${formatBytes(encoded.contentLength)}${plan.secrets.length > 0 ? ', signed' : ''}\n`,
    );
  }
  const progress = new ProgressBar(io.stderr, encoded.contentLength);
  let result: PostResult;
  try {
    result = await postCallback({
      url: plan.url,
      encoded,
      headers,
      connectTimeoutMs: plan.connectTimeoutMs,
      responseTimeoutMs: plan.responseTimeoutMs,
      onProgress: (sent) => progress.update(sent),
    });
  } catch (error) {
    progress.finish();
    if (!(error instanceof PostError)) throw error;
    if (plan.json) {
      io.stdout.write(
        jsonLine({ ok: false, ...summary, status: null, error: error.message, code: error.code ?? null }),
      );
    }
    io.stderr.write(`mediahook send: ${error.message}\n`);
    return 1;
  }
  progress.finish();
  const ok = result.statusCode >= 200 && result.statusCode < 300;
  if (result.location !== null) {
    io.stderr.write(`mediahook send: redirect to ${escapeControls(result.location)} not followed\n`);
  }
  if (plan.json) {
    const record = {
      ok,
      ...summary,
      status: result.statusCode,
      statusText: result.statusText,
      ...(result.location === null ? {} : { location: result.location }),
      durationMs: result.durationMs,
      body: displayBody(result.body, false),
      bodyTruncated: result.bodyTruncated || result.bodyLate || result.bodyCut,
    };
    io.stdout.write(jsonLine(record));
  } else {
    printAnswer(result, io);
  }
  return ok ? 0 : 1;
}

/**
 * `mediahook send`: one callback, built from flags, sent, and the answer printed.
 *
 * @example
 * // mediahook send http://127.0.0.1:9000/hook --family A --file result.jpg --secret whsec_…
 * await sendCommand.run(['http://127.0.0.1:9000/hook', '--family', 'A', '--file', 'result.jpg'], io);
 */
export const sendCommand: Command = {
  usage: USAGE,
  run,
};
