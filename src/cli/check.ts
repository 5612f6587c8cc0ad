import { Agent, request } from 'undici';
import { userAgent } from '../version.ts';
import { type CliIo, type Command, durationFlag, parseCommandArgs, UsageError } from './command.ts';
import { type ConformanceCase, conformanceCases } from './conformance-cases.ts';

const USAGE = `Usage: mediahook check URL [--secret whsec_…] [--json] [--timeout 10s]

Checks that the receiver at URL conforms: sends the four valid callbacks and an MP4 in
family A (expects 200), repeats one (expects 200 again), then malformed callbacks and, with
--secret, badly signed ones (expects 500). Prints a pass/fail table with the reason for each
row; --json prints one JSON document instead. Exit 0 only when every row passes.

Options:
  --secret whsec_…  the receiver's secret: valid callbacks are signed, and signature
                    failures are checked too (repeatable)
  --json            machine-readable result on stdout
  --timeout DUR     time for each answer (default 10s)
`;

export interface CheckRow {
  case: string;
  expected: number;
  got: number | null;
  pass: boolean;
  /** Why it failed, or the receiver's error code for an expected 500. */
  reason: string;
}

function reasonOf(row: ConformanceCase, status: number | null, body: string, error: string | null): string {
  if (status === null) return `no answer: ${error}`;
  let code: string | undefined;
  try {
    code = (JSON.parse(body) as { error?: { code?: string } }).error?.code;
  } catch {
    // Not JSON: a receiver may answer plain text.
  }
  if (status === row.expect) return row.expect === 500 ? (code ? `refused: ${code}` : 'refused') : 'accepted';
  if (row.expect === 200) return `a valid callback was refused (${status}${code ? ` ${code}` : ''})`;
  return status >= 200 && status < 300 ? 'an invalid callback was accepted' : `answered ${status}, not 500`;
}

/** Sends the battery to `url` and grades each answer. */
export async function runConformanceCheck(
  url: string,
  secrets: readonly string[],
  timeoutMs: number,
): Promise<CheckRow[]> {
  const agent = new Agent({
    connect: { timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  const rows: CheckRow[] = [];
  try {
    for (const item of await conformanceCases(secrets)) {
      let status: number | null = null;
      let body = '';
      let error: string | null = null;
      try {
        const response = await request(url, {
          method: 'POST',
          dispatcher: agent,
          headers: { ...item.headers, 'content-length': String(item.body.length), 'user-agent': userAgent() },
          body: item.body,
        });
        status = response.statusCode;
        body = (await response.body.text()).slice(0, 2048);
      } catch (cause) {
        error = cause instanceof Error ? cause.message : String(cause);
      }
      rows.push({
        case: item.name,
        expected: item.expect,
        got: status,
        pass: status === item.expect,
        reason: reasonOf(item, status, body, error),
      });
    }
  } finally {
    await agent.close();
  }
  return rows;
}

function table(rows: CheckRow[]): string {
  const width = Math.max(...rows.map((row) => row.case.length));
  const lines = rows.map(
    (row, i) =>
      `${String(i + 1).padStart(2)}  ${row.pass ? 'PASS' : 'FAIL'}  ${row.case.padEnd(width)}  expected ${row.expected}, got ${row.got ?? '—'}  ${row.reason}`,
  );
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
    if (positionals.length !== 1) throw new UsageError('give exactly one receiver URL');
    let url: URL;
    try {
      url = new URL(positionals[0]!);
    } catch {
      throw new UsageError(`not a URL: ${positionals[0]}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UsageError('the URL must be http or https');
    for (const secret of values.secret ?? []) {
      if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret))
        throw new UsageError('--secret takes a whsec_… secret');
    }
    const timeoutMs = durationFlag('--timeout', values.timeout, 10_000, { min: 100 });
    const rows = await runConformanceCheck(url.href, values.secret ?? [], timeoutMs);
    const passed = rows.filter((row) => row.pass).length;
    const conforms = passed === rows.length;
    if (values.json) {
      io.stdout.write(
        `${JSON.stringify({ url: url.href, conforms, passed, failed: rows.length - passed, rows })}\n`,
      );
    } else {
      io.stdout.write(table(rows));
      io.stdout.write(
        `${passed} passed, ${rows.length - passed} failed: the receiver ${conforms ? 'conforms' : 'does not conform'}\n`,
      );
    }
    return conforms ? 0 : 1;
  },
};
