/**
 * `mediahook check --secret` against receivers that verify signatures: every case is signed
 * as the service signs (webhook-id = id_gen), when it is sent; a correctly signed malformed
 * callback refused as `bad_signature` is not the refusal its row looks for.
 */
import { spawn } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanUp, ourHandler, ourReceiver, runCheck, SECRET, serve } from './check-helpers.ts';
import { conformanceCases } from '../../src/cli/conformance-cases.ts';
import { BIN, runCli } from './helpers.ts';

afterEach(cleanUp);

const OTHER_SECRET = 'whsec_c2Vjb25kLXNlY3JldC1vZi0yNC1ieXRlcw==';

/** The id_gen of a multipart body (the first), or of a JSON one. */
function idGenOf(body: Buffer): string | undefined {
  const text = body.toString('latin1');
  const part = /name="id_gen"\r\n\r\n([^\r]*)\r\n/.exec(text)?.[1];
  if (part !== undefined) return part;
  try {
    const json = JSON.parse(text) as { id_gen?: unknown };
    return typeof json.id_gen === 'string' ? json.id_gen : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A receiver that is not mediahook, written from Standard Webhooks: it verifies the signature
 * properly, webhook-id = id_gen included, and then answers 200 to anything, whatever its parts.
 */
function signatureOnlyReceiver(secret: string, fresh = (ageSeconds: number) => Math.abs(ageSeconds) <= 300) {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const refuse = (message: string) =>
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { code: 'bad_signature', message } }));
      const { 'webhook-id': id, 'webhook-timestamp': stamp, 'webhook-signature': signature } = req.headers;
      if (typeof id !== 'string' || typeof stamp !== 'string' || typeof signature !== 'string')
        return refuse('not signed');
      if (!fresh(Date.now() / 1000 - Number(stamp))) return refuse('stale');
      const expected = createHmac('sha256', key).update(`${id}.${stamp}.`).update(body).digest();
      const matches = signature.split(' ').some((entry) => {
        const given = Buffer.from(entry.slice(3), 'base64');
        return entry.startsWith('v1,') && given.length === 32 && timingSafeEqual(given, expected);
      });
      if (!matches) return refuse('no signature matches');
      if (idGenOf(body) !== id) return refuse('webhook-id is not the id_gen');
      res.end('ok');
    });
  };
}

/** The valid rows come first, then the malformed ones, then 5 badly signed. */
const unsignedCases = await conformanceCases([]);
const VALID = unsignedCases.filter((row) => row.kind === 'valid').length;
const CONTENT = unsignedCases.filter((row) => row.kind === 'content').length;

describe('mediahook check --secret', () => {
  it('fails a receiver that verifies signatures (webhook-id = id_gen) but accepts any content', async () => {
    const result = await runCheck(await serve(signatureOnlyReceiver(SECRET)), ['--secret', SECRET]);
    expect(result.code).toBe(1);
    const rows = result.report.rows;
    expect(rows).toHaveLength(VALID + CONTENT + 5);
    expect(rows.slice(0, VALID).every((row) => row.pass)).toBe(true);
    const content = rows.slice(VALID, VALID + CONTENT);
    expect(content.map((row) => row.reason)).toEqual(content.map(() => 'an invalid callback was accepted'));
    expect(content.map((row) => row.case)).toContain('not multipart/form-data');
    expect(rows.slice(VALID + CONTENT).every((row) => row.pass && row.code === 'bad_signature')).toBe(true);
  });

  it('asks whether signatures are checked when a receiver accepts every badly signed row', async () => {
    const result = await runCheck(await ourReceiver(), ['--secret', SECRET]);
    const failed = result.report.rows.filter((row) => !row.pass);
    expect(failed.map((row) => row.case)).toEqual([
      'unsigned',
      'signed with another secret',
      'signed an hour ago',
      'signed an hour ahead',
      'body changed after signing',
    ]);
    expect(new Set(failed.map((row) => row.reason))).toEqual(
      new Set(['a badly signed callback was accepted: is the signature checked?']),
    );
  });

  it('fails a receiver that takes a signature from the future, as Standard Webhooks bounds both ways', async () => {
    const pastOnly = signatureOnlyReceiver(SECRET, (age) => age <= 300);
    const result = await runCheck(await serve(pastOnly), ['--secret', SECRET]);
    const signatureRows = result.report.rows.slice(VALID + CONTENT);
    expect(signatureRows.filter((row) => !row.pass).map((row) => [row.case, row.reason])).toEqual([
      ['signed an hour ahead', 'a badly signed callback was accepted: is the signature checked?'],
    ]);
  });

  it('fails a correctly signed malformed row refused as bad_signature, and hints when every valid one was', async () => {
    const url = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        const error = { code: 'bad_signature', message: 'no' };
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
      });
    });
    const result = await runCheck(url, ['--secret', SECRET]);
    expect(result.code).toBe(1);
    const rows = result.report.rows;
    const content = rows.slice(VALID, VALID + CONTENT);
    expect(content.every((row) => !row.pass && /yet it was signed correctly/.test(row.reason))).toBe(true);
    expect(rows.slice(VALID + CONTENT).every((row) => row.pass)).toBe(true);
    expect(result.report.hint).toMatch(/every valid callback as bad_signature, though each was signed/);
    // Our own receiver given another secret: the same hint, on stderr under the table.
    const wrong = await runCli(['check', await ourReceiver({ secret: OTHER_SECRET }), '--secret', SECRET]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(
      /^mediahook check: the receiver refused every valid callback as bad_signature, though each was signed: is --secret the receiver's secret/m,
    );
    // Unsigned against a signing receiver keeps its own hint; a conforming run has none.
    expect((await runCheck(await ourReceiver({ secret: SECRET }))).report.hint).toMatch(
      /run check with its --secret/,
    );
    expect(
      (await runCheck(await ourReceiver({ secret: SECRET }), ['--secret', SECRET])).report.hint,
    ).toBeUndefined();
  });

  it('signs each case when it is sent, and waits out a receiver that answers slowly within the timeout', async () => {
    const handler = await ourHandler({ secret: SECRET });
    const lags: number[] = [];
    let seen = 0;
    const url = await serve((req, res) => {
      const stamp = Number(req.headers['webhook-timestamp']);
      // The rows signed an hour ago and ahead are off on purpose; the unsigned one has no timestamp.
      if (Math.abs(Date.now() / 1000 - stamp) < 1800) lags.push(Date.now() / 1000 - stamp);
      // The first three answers take 1.1 s each: signed up front, the third would be 2 s old.
      setTimeout(() => handler(req, res), seen++ < 3 ? 1100 : 0);
    });
    const result = await runCheck(url, ['--secret', SECRET, '--timeout', '3s']);
    expect(result.report.rows.filter((row) => !row.pass)).toEqual([]);
    expect(result.code).toBe(0);
    expect(lags).toHaveLength(VALID + CONTENT + 2);
    expect(Math.max(...lags)).toBeLessThan(1.5);
  });

  it('passes `mediahook listen --secret`: its refusals of the malformed rows name their content', async () => {
    const out = await mkdtemp(join(tmpdir(), 'mediahook-check-listen-'));
    const child = spawn(BIN, ['listen', '--port', '0', '--out', out, '--secret', SECRET], { stdio: 'pipe' });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (text: string) => {
          stderr += text;
          const match = /receiving at (http:\/\/\S+)/.exec(stderr);
          if (match) resolve(match[1]!);
        });
        child.on('exit', (code) => reject(new Error(`listen exited ${code}: ${stderr}`)));
      });
      child.stdout.resume();
      const result = await runCheck(url, ['--secret', SECRET]);
      expect(result.report.rows.filter((row) => !row.pass)).toEqual([]);
      expect(result.code).toBe(0);
      const content = result.report.rows.slice(VALID, VALID + CONTENT);
      expect(content.every((row) => row.code !== undefined && row.code !== 'bad_signature')).toBe(true);
    } finally {
      await new Promise((resolve) => {
        child.on('exit', resolve);
        child.kill('SIGTERM');
      });
      await rm(out, { recursive: true, force: true });
    }
  });
});
