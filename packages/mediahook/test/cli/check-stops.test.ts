/**
 * `mediahook check` stops at the first request that got no answer in time, or whose TLS
 * handshake failed: every other case would fail alike, each after the same wait.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { conformanceCases } from '../../src/cli/conformance-cases.ts';
import { cleanUp, ourHandler, runCheck, serve } from './check-helpers.ts';
import { runCli } from './helpers.ts';

afterEach(cleanUp);

/** Cases of a run without --secret. */
const CASES = (await conformanceCases([])).length;

describe('mediahook check, stopping early', () => {
  it('stops after the first request that gets no answer, and says so once', async () => {
    let requests = 0;
    // Reads each body, never answers.
    const url = await serve((req) => {
      requests++;
      req.resume();
    });
    const run = await runCli(['check', url, '--timeout', '300ms']);
    expect(run.code).toBe(1);
    expect(requests).toBe(1);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /FAIL {2}A success, JPEG {2}expected 200, got — {2}no answer: no answer within 300ms after/,
    );
    expect(lines[1]).toBe(`0 passed, 1 failed, ${CASES - 1} not sent: the receiver does not conform`);
    expect(run.stderr).toBe(
      `mediahook check: stopped at row 1 (A success, JPEG): no answer within 300ms after the body was sent; the ${CASES - 1} other cases were not sent\n`,
    );
  });

  it('keeps the rows before one that timed out, and tells what was not sent in --json', async () => {
    const handler = await ourHandler();
    let requests = 0;
    // Answers three, then stalls.
    const url = await serve((req, res) => {
      if (++requests <= 3) return handler(req, res);
      req.resume();
    });
    const result = await runCheck(url, ['--timeout', '300ms']);
    expect(result.code).toBe(1);
    expect(requests).toBe(4);
    expect(result.report).toMatchObject({ conforms: false, passed: 3, failed: 1, unsent: CASES - 4 });
    expect(result.report.stopped).toMatch(/^stopped at row 4 \(B success, JPEG\): no answer within 300ms/);
    expect(result.report.rows.map((row) => row.pass)).toEqual([true, true, true, false]);
  });

  it('reads a trickling answer for one timeout only, and carries on by its status', async () => {
    const handler = await ourHandler();
    let requests = 0;
    // Our receiver's status and body, sent chunked without its Content-Length, then a byte
    // every 50 ms, never ending.
    const url = await serve((req, res) => {
      requests++;
      const writeHead = res.writeHead.bind(res);
      res.writeHead = ((status: number, headers: Record<string, string | number>) => {
        const { 'content-length': _, ...rest } = headers;
        return writeHead(status, rest);
      }) as typeof res.writeHead;
      const write = res.write.bind(res);
      res.end = ((chunk?: unknown) => {
        if (chunk !== undefined) write(chunk as string);
        const drip = setInterval(() => write(' '), 50);
        res.on('close', () => clearInterval(drip));
        return res;
      }) as typeof res.end;
      return handler(req, res);
    });
    const result = await runCheck(url, ['--timeout', '300ms']);
    expect(requests).toBe(CASES);
    expect(result.report).toMatchObject({ conforms: true, passed: CASES, failed: 0 });
    expect(result.code).toBe(0);
  });

  it('stops after a failed TLS handshake', async () => {
    let requests = 0;
    const url = await serve((req, res) => {
      requests++;
      req.resume();
      res.end('ok');
    });
    // A plain-HTTP port: the handshake fails at once, and would again for every case.
    const result = await runCheck(url.replace('http://', 'https://'));
    expect(result.code).toBe(1);
    expect(requests).toBe(0);
    expect(result.report.rows).toHaveLength(1);
    expect(result.report.rows[0]!.reason).toMatch(/^no answer: the TLS handshake failed: /);
    expect(result.report.rows[0]!.reason).not.toMatch(/\n/);
    expect(result.report).toMatchObject({ conforms: false, unsent: CASES - 1 });
  });
});
