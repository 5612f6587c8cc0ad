import {
  type CliIo,
  type Command,
  durationFlag,
  escapeControls,
  jsonLine,
  parseCommandArgs,
  secretFlags,
  urlArgument,
} from './command.ts';
import { type ConformanceCase, conformanceCases } from './conformance-cases.ts';
import { displayUrl, PostError, type PostResult, postCallback } from './post-callback.ts';
import { isTlsErrorCode } from './tls-error.ts';

const USAGE = `Usage: mediahook check URL [--secret whsec_…] [--json] [--timeout 10s]

Checks that the receiver at URL conforms: sends a success and an error callback of every
family, an MP4 in each family that carries one, and callbacks with opaque status, id_gen and
time_gen (expects 200), repeats one (expects 200 again), then malformed callbacks and, with --secret, badly signed ones (expects 500). Prints a
pass/fail table with the reason for each row; --json prints one JSON document instead.
Exit 0 only when every row passes; 1 also when the receiver cannot be reached at all.
A request that gets no answer within the timeout, or whose TLS handshake fails, stops the
check there (the other cases are not sent): exit 1.

URL credentials (https://user:password@host/…) are sent as Basic authorization, and the
password is printed as ***.

Options:
  --secret whsec_…  the receiver's secret: every callback is signed (webhook-id = its
                    id_gen), and signature failures are checked too (repeatable)
  --json            machine-readable result on stdout
  --timeout DUR     time to connect, and for each answer (default 10s)
`;

export interface CheckRow {
  case: string;
  expected: number;
  got: number | null;
  pass: boolean;
  /** Why it failed, or the receiver's error code for an expected 500. */
  reason: string;
  /** The error code of the receiver's JSON error body, when it gave one. */
  code?: string;
  /** Worth knowing, but no failure: a 500 whose body is not the JSON error shape. */
  note?: string;
}

/** The error code of a JSON error body, and whether it is `{"error":{"code","message"}}`. */
function errorBody(body: string): { code?: string | undefined; shaped: boolean } {
  let error: { code?: unknown; message?: unknown } | undefined;
  try {
    error = (JSON.parse(body) as { error?: typeof error } | null)?.error;
  } catch {
    return { shaped: false }; // a receiver may answer plain text
  }
  const code = typeof error?.code === 'string' ? error.code : undefined;
  return { code, shaped: code !== undefined && typeof error?.message === 'string' };
}

function grade(item: ConformanceCase, answer: PostResult, signed: boolean): CheckRow {
  const status = answer.statusCode;
  const { code, shaped } = errorBody(answer.body.toString('utf8'));
  // With --secret a content row is signed correctly, webhook-id = id_gen: a receiver that calls
  // it bad_signature refused it without judging the content the row is about. Other codes are
  // taken as they come, since only mediahook's are known.
  const unjudged = signed && item.kind === 'content' && status === 500 && code === 'bad_signature';
  let reason: string;
  if (unjudged) {
    reason =
      'refused as bad_signature, yet it was signed correctly (webhook-id = id_gen): its content was not judged';
  } else if (status >= 300 && status < 400) {
    reason = `answered ${status}, a redirect to ${answer.location ?? '(no Location)'}: not followed`;
  } else if (status === item.expect) {
    reason = item.expect === 200 ? 'accepted' : code ? `refused: ${code}` : 'refused';
  } else if (item.expect === 200 && status >= 200 && status < 300) {
    // Delivered, as far as mediahook's service is concerned, but the spec's answer is 200.
    reason = `accepted with ${status}, where the spec answers 200`;
  } else if (item.expect === 200) {
    reason = `a valid callback was refused (${status}${code ? ` ${code}` : ''})`;
  } else if (status >= 200 && status < 300) {
    reason =
      item.kind === 'signature'
        ? 'a badly signed callback was accepted: is the signature checked?'
        : 'an invalid callback was accepted';
  } else {
    reason = `answered ${status}, not 500`;
  }
  const row: CheckRow = {
    case: item.name,
    expected: item.expect,
    got: status,
    pass: status === item.expect && !unjudged,
    reason,
  };
  if (code !== undefined) row.code = code;
  // protocol.md's decisions ask this of mediahook's receivers; the spec does not, so it fails no row.
  if (status === 500 && !shaped) row.note = 'the 500 body is not {"error":{"code","message"}} JSON';
  return row;
}

/** What a check found: the rows sent, and why it stopped early when it did. */
interface CheckRun {
  rows: CheckRow[];
  /** Why the cases after the last row were not sent. */
  stopped?: string;
  /** How many cases were not sent. */
  unsent: number;
}

/**
 * Why a request that got no answer should stop the check, or undefined when the next case may
 * fare otherwise (a connection closed on one body says nothing of the next).
 */
function stopsTheCheck(error: PostError): string | undefined {
  const code = error.code ?? '';
  // OpenSSL's messages span lines; a row's reason is one.
  if (isTlsErrorCode(code)) return `the TLS handshake failed: ${error.message.replace(/\s+/g, ' ').trim()}`;
  // A receiver that let one request wait this long would make each of the rest wait too.
  if (error.timedOut) return error.message;
  return undefined;
}

/**
 * Sends the battery to `url`, one request at a time, and grades each answer. Throws when the
 * first request cannot reach the receiver at all, rather than failing every row alike; stops
 * after a request that timed out or failed its TLS handshake, as every other one would too,
 * each after the same wait.
 */
async function runConformanceCheck(
  url: URL,
  secrets: readonly string[],
  timeoutMs: number,
): Promise<CheckRun> {
  const rows: CheckRow[] = [];
  const cases = await conformanceCases(secrets);
  for (const [index, item] of cases.entries()) {
    let answer: PostResult;
    try {
      answer = await postCallback({
        url,
        encoded: {
          contentType: item.contentType,
          contentLength: item.body.length,
          body: async function* () {
            yield item.body;
          },
        },
        // Signed now, not when the battery was made: slow answers to the rows before must not
        // take this one's timestamp toward the receiver's tolerance.
        headers: item.sign(),
        connectTimeoutMs: timeoutMs,
        responseTimeoutMs: timeoutMs,
        // Enough for an error body with a long message to still parse as the JSON it is.
        previewBytes: 64 * 1024,
      });
    } catch (error) {
      if (!(error instanceof PostError)) throw error;
      if (rows.length === 0 && error.unreachable) {
        throw new Error(`cannot reach ${displayUrl(url)}: ${error.message}`);
      }
      const stop = stopsTheCheck(error);
      const reason = `no answer: ${stop ?? error.message}`;
      rows.push({ case: item.name, expected: item.expect, got: null, pass: false, reason });
      const unsent = cases.length - index - 1;
      if (stop === undefined || unsent === 0) continue;
      return { rows, unsent, stopped: `stopped at row ${index + 1} (${item.name}): ${stop}` };
    }
    rows.push(grade(item, answer, secrets.length > 0));
  }
  return { rows, unsent: 0 };
}

/**
 * What to do when every valid callback was refused as bad_signature: unsigned, the receiver has
 * a secret and check was run without it; signed, most likely with another secret. Either way
 * the failures say nothing about the receiver but that.
 */
function secretHint(rows: readonly CheckRow[], secrets: readonly string[]): string | undefined {
  const valid = rows.filter((row) => row.expected === 200);
  if (valid.length === 0 || !valid.every((row) => !row.pass && row.code === 'bad_signature'))
    return undefined;
  if (secrets.length > 0) {
    // Signed and still refused, every one: the secret (or the clock) is the likelier fault.
    return "the receiver refused every valid callback as bad_signature, though each was signed: is --secret the receiver's secret (and this machine's clock within its tolerance, 5 min by default)?";
  }
  return 'every valid callback was refused as bad_signature: the receiver requires signed callbacks; run check with its --secret';
}

/** The table for a terminal; what the receiver wrote (codes, Locations) is escaped. */
function table(rows: CheckRow[]): string {
  const width = Math.max(...rows.map((row) => row.case.length));
  const lines = rows.map((row, i) => {
    const note = row.note === undefined ? '' : `  (note: ${row.note})`;
    const got = `expected ${row.expected}, got ${row.got ?? '—'}`;
    const verdict = row.pass ? 'PASS' : 'FAIL';
    return `${String(i + 1).padStart(2)}  ${verdict}  ${row.case.padEnd(width)}  ${got}  ${escapeControls(row.reason)}${note}`;
  });
  return `${lines.join('\n')}\n`;
}

export const checkCommand: Command = {
  usage: USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseCommandArgs(argv, {
      secret: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      timeout: { type: 'string' },
    });
    const url = urlArgument(positionals);
    const secrets = secretFlags(values.secret);
    const timeoutMs = durationFlag('--timeout', values.timeout, 10_000, { min: 100 });
    const { rows, stopped, unsent } = await runConformanceCheck(url, secrets, timeoutMs);
    const passed = rows.filter((row) => row.pass).length;
    const failed = rows.length - passed;
    const noted = rows.filter((row) => row.note !== undefined).length;
    const conforms = failed === 0 && stopped === undefined;
    const hint = secretHint(rows, secrets);
    if (values.json) {
      const stop = stopped === undefined ? {} : { stopped, unsent };
      const result = {
        url: displayUrl(url),
        conforms,
        passed,
        failed,
        noted,
        ...stop,
        ...(hint && { hint }),
        rows,
      };
      io.stdout.write(jsonLine(result));
    } else {
      io.stdout.write(table(rows));
      const notes = noted > 0 ? `, ${noted} with a note` : '';
      const left = stopped === undefined ? '' : `, ${unsent} not sent`;
      const verdict = conforms ? 'conforms' : 'does not conform';
      io.stdout.write(`${passed} passed, ${failed} failed${left}${notes}: the receiver ${verdict}\n`);
      if (stopped !== undefined) {
        const other = unsent === 1 ? 'the other case was' : `the ${unsent} other cases were`;
        // Escaped as the rows are: an OpenSSL message may hold anything the peer sent.
        io.stderr.write(`mediahook check: ${escapeControls(stopped)}; ${other} not sent\n`);
      }
      if (hint) io.stderr.write(`mediahook check: ${hint}\n`);
    }
    return conforms ? 0 : 1;
  },
};
