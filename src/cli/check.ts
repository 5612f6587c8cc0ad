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

const USAGE = `Usage: mediahook check URL [--secret whsec_…] [--json] [--timeout 10s]

Checks that the receiver at URL conforms: sends the four valid callbacks, an MP4 in family A
and callbacks with opaque status, id_gen and time_gen (expects 200), repeats one (expects 200
again), then malformed callbacks and, with --secret, badly signed ones (expects 500). Prints a
pass/fail table with the reason for each row; --json prints one JSON document instead.
Exit 0 only when every row passes; 1 also when the receiver cannot be reached at all.

URL credentials (https://user:password@host/…) are sent as Basic authorization, and the
password is printed as ***.

Options:
  --secret whsec_…  the receiver's secret: valid callbacks are signed, and signature
                    failures are checked too (repeatable)
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

function grade(item: ConformanceCase, answer: PostResult): CheckRow {
  const status = answer.statusCode;
  const { code, shaped } = errorBody(answer.body.toString('utf8'));
  let reason: string;
  if (status >= 300 && status < 400) {
    reason = `answered ${status}, a redirect to ${answer.location ?? '(no Location)'}: not followed`;
  } else if (status === item.expect) {
    reason = item.expect === 200 ? 'accepted' : code ? `refused: ${code}` : 'refused';
  } else if (item.expect === 200) {
    reason = `a valid callback was refused (${status}${code ? ` ${code}` : ''})`;
  } else {
    reason =
      status >= 200 && status < 300 ? 'an invalid callback was accepted' : `answered ${status}, not 500`;
  }
  const row: CheckRow = {
    case: item.name,
    expected: item.expect,
    got: status,
    pass: status === item.expect,
    reason,
  };
  if (code !== undefined) row.code = code;
  // PRODUCT §1 asks this of mediahook's receivers; the spec does not, so it fails no row.
  if (status === 500 && !shaped) row.note = 'the 500 body is not {"error":{"code","message"}} JSON';
  return row;
}

/**
 * Sends the battery to `url`, one request at a time, and grades each answer. Throws when the
 * first request cannot reach the receiver at all, rather than failing every row alike.
 */
export async function runConformanceCheck(
  url: URL,
  secrets: readonly string[],
  timeoutMs: number,
): Promise<CheckRow[]> {
  const rows: CheckRow[] = [];
  for (const item of await conformanceCases(secrets)) {
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
        headers: item.headers,
        connectTimeoutMs: timeoutMs,
        responseTimeoutMs: timeoutMs,
        previewBytes: 2048,
      });
    } catch (error) {
      if (!(error instanceof PostError)) throw error;
      if (rows.length === 0 && error.unreachable) {
        throw new Error(`cannot reach ${displayUrl(url)}: ${error.message}`);
      }
      const reason = `no answer: ${error.message}`;
      rows.push({ case: item.name, expected: item.expect, got: null, pass: false, reason });
      continue;
    }
    rows.push(grade(item, answer));
  }
  return rows;
}

/**
 * What to do when every valid callback was refused as unsigned: the receiver has a secret and
 * check was run without it, so the failures say nothing about the receiver but that.
 */
function secretHint(rows: readonly CheckRow[], secrets: readonly string[]): string | undefined {
  if (secrets.length > 0) return undefined;
  const valid = rows.filter((row) => row.expected === 200);
  if (valid.length === 0 || !valid.every((row) => !row.pass && row.code === 'bad_signature'))
    return undefined;
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
  name: 'check',
  summary: 'Check that a receiver conforms: valid, repeated, malformed, badly signed callbacks',
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
    const rows = await runConformanceCheck(url, secrets, timeoutMs);
    const passed = rows.filter((row) => row.pass).length;
    const noted = rows.filter((row) => row.note !== undefined).length;
    const conforms = passed === rows.length;
    const hint = secretHint(rows, secrets);
    if (values.json) {
      const failed = rows.length - passed;
      const result = { url: displayUrl(url), conforms, passed, failed, noted, ...(hint && { hint }), rows };
      io.stdout.write(jsonLine(result));
    } else {
      io.stdout.write(table(rows));
      const notes = noted > 0 ? `, ${noted} with a note` : '';
      const verdict = conforms ? 'conforms' : 'does not conform';
      io.stdout.write(`${passed} passed, ${rows.length - passed} failed${notes}: the receiver ${verdict}\n`);
      if (hint) io.stderr.write(`mediahook check: ${hint}\n`);
    }
    return conforms ? 0 : 1;
  },
};
