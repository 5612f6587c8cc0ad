/**
 * `mediahook check` passes a conforming receiver and fails, on the right rows, receivers that
 * are deliberately broken: one that accepts everything, one that rejects MP4, one that is not
 * idempotent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isUuidv7 } from '../../src/protocol/uuidv7.ts';
import { MemoryReceiptStore, type Receipt } from '../../src/receiver/index.ts';
import { cleanUp, failing, ourHandler, ourReceiver, runCheck, SECRET, serve } from './check-helpers.ts';
import { startUnacceptingListener } from '../unaccepting-listener.ts';
import { closedPort, runCli } from './helpers.ts';

afterEach(cleanUp);

describe('mediahook check', () => {
  it('passes our receiver, signed and unsigned', async () => {
    const plain = await runCheck(await ourReceiver());
    expect(failing(plain)).toEqual([]);
    expect(plain.code).toBe(0);
    expect(plain.report).toMatchObject({ conforms: true, failed: 0 });
    const signed = await runCheck(await ourReceiver({ secret: SECRET }), ['--secret', SECRET]);
    expect(failing(signed)).toEqual([]);
    expect(signed.report.rows.map((row) => row.case)).toContain('body changed after signing');
    expect(signed.code).toBe(0);
  });

  it('says to pass --secret when a receiver that has one refused every valid callback unsigned', async () => {
    const url = await ourReceiver({ secret: SECRET });
    const result = await runCheck(url);
    expect(result.code).toBe(1);
    expect(result.report.hint).toMatch(/requires signed callbacks; run check with its --secret/);
    expect(result.report.rows.find((row) => !row.pass)?.code).toBe('bad_signature');
    const plain = await runCli(['check', url]);
    expect(plain.stderr).toMatch(/mediahook check: every valid callback was refused as bad_signature/);
    // A receiver that merely fails some valid callbacks gets no such hint.
    expect((await runCheck(await ourReceiver())).report.hint).toBeUndefined();
  });

  it('fails a receiver that accepts everything, on every malformed row', async () => {
    const url = await serve((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    const result = await runCheck(url);
    expect(result.code).toBe(1);
    const rows = result.report.rows;
    expect(rows.filter((row) => row.pass).map((row) => row.case)).toEqual(
      rows.slice(0, 10).map((row) => row.case),
    );
    expect(rows.slice(10).every((row) => row.reason === 'an invalid callback was accepted')).toBe(true);
    expect(failing(result)).toContain('an MP4 in family B');
  });

  it('reads the code of an error body whose message is long', async () => {
    const error = { code: 'missing_part', message: `long ${'x'.repeat(8000)}` };
    const url = await serve((req, res) => {
      req.resume();
      req.on('end', () =>
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error })),
      );
    });
    const refused = (await runCheck(url)).report.rows.filter((row) => row.got === 500);
    expect(refused.length).toBeGreaterThan(10);
    expect(refused.map((row) => [row.code, row.note])).toEqual(
      refused.map(() => ['missing_part', undefined]),
    );
  });

  it('fails a receiver that accepts with 204, saying the spec answers 200', async () => {
    const handler = await ourHandler();
    const url = await serve((req, res) => {
      const writeHead = res.writeHead.bind(res);
      res.writeHead = ((status: number, headers: Record<string, string | number>) =>
        writeHead(status === 200 ? 204 : status, status === 200 ? {} : headers)) as typeof res.writeHead;
      const end = res.end.bind(res);
      res.end = ((chunk?: unknown) =>
        res.statusCode === 204 ? end() : end(chunk as string)) as typeof res.end;
      return handler(req, res);
    });
    const result = await runCheck(url);
    expect(result.code).toBe(1);
    const accepted = result.report.rows.filter((row) => row.expected === 200);
    expect(accepted.length).toBeGreaterThan(0);
    for (const row of accepted) {
      expect(row).toMatchObject({
        pass: false,
        got: 204,
        reason: 'accepted with 204, where the spec answers 200',
      });
    }
  });

  it('fails a receiver that rejects MP4, on the MP4 row only', async () => {
    const url = await ourReceiver({
      onSuccess(callback) {
        if (callback.file.mediaType === 'video/mp4') throw new Error('videos are not supported here');
      },
    });
    const result = await runCheck(url);
    expect(result.code).toBe(1);
    expect(failing(result)).toEqual(['A success, MP4']);
    expect(result.report.rows.find((row) => !row.pass)?.reason).toMatch(
      /valid callback was refused \(500 handler_failed\)/,
    );
  });

  it('fails a receiver that is not idempotent, on the repeat row', async () => {
    // Forgets nothing, but answers a second copy with an error instead of 200.
    class StrictStore extends MemoryReceiptStore {
      readonly seen = new Set<string>();
      override async get(): Promise<Receipt | undefined> {
        return undefined;
      }
      override async add(receipt: Receipt): Promise<boolean> {
        this.seen.add(receipt.id_gen);
        return true;
      }
    }
    const store = new StrictStore();
    const url = await ourReceiver({
      store,
      onSuccess(callback) {
        if (store.seen.has(callback.id_gen)) throw new Error('duplicate key');
      },
    });
    const result = await runCheck(url);
    expect(result.code).toBe(1);
    expect(failing(result)).toEqual(['A success repeated (same id_gen): answered 200 again']);
  });

  it('stops at once, with one message, when nothing listens', async () => {
    const url = `http://127.0.0.1:${await closedPort()}/hook`;
    const run = await runCli(['check', url]);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toBe(
      `mediahook check: cannot reach ${url}: connection refused by ${new URL(url).host}\n`,
    );
  });

  it('stops at once, with one message, when the first connect does not complete in time', async () => {
    const listener = await startUnacceptingListener();
    try {
      const url = `${listener.origin}/hook`;
      const run = await runCli(['check', url, '--timeout', '300ms']);
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toBe(
        `mediahook check: cannot reach ${url}: could not connect to ${new URL(url).host} within 300ms\n`,
      );
    } finally {
      await listener.close();
    }
  });

  it('sends opaque status, id_gen and time_gen, which a UUID- and RFC 3339-minded receiver fails', async () => {
    const bodies: string[] = [];
    const recording = await serve((req, res) => {
      let body = '';
      req.setEncoding('latin1').on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        bodies.push(body);
        res.end('ok');
      });
    });
    await runCheck(recording);
    await runCheck(recording);
    const ids = bodies.map((body) => /name="id_gen"\r\n\r\n([^\r]*)/.exec(body)?.[1]).filter(Boolean);
    const opaque = ids.filter((id) => !isUuidv7(id!));
    expect(opaque).toHaveLength(2);
    expect(new Set(opaque).size).toBe(2);
    expect(opaque.every((id) => /^op-[\w-]+\.x$/.test(id!) && id!.length <= 256)).toBe(true);
    const picky = (callback: { status: string; id_gen: string; time_gen: string }) => {
      const iso = /^\d{4}-\d\d-\d\dT/.test(callback.time_gen);
      if (!['success', 'error'].includes(callback.status) || !isUuidv7(callback.id_gen) || !iso)
        throw new Error('not what the service sends');
    };
    const result = await runCheck(await ourReceiver({ onSuccess: picky, onError: picky }));
    expect(failing(result)).toEqual([
      'status other than success/error (done)',
      'id_gen that is not a UUID',
      'time_gen in Unix seconds',
    ]);
  });

  it('notes a 500 that is not JSON, names redirects and escapes what the receiver wrote', async () => {
    const url = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/plain') res.writeHead(500).end('bad request');
        else if (req.url === '/moved') res.writeHead(302, { location: 'http://127.0.0.1:1/x' }).end();
        else {
          const error = { code: '\u001b]0;pwned\u0007\u009b2J', message: 'x' };
          res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
        }
      });
    });
    const plain = await runCheck(url.replace('/hook', '/plain'));
    const refused = plain.report.rows.filter((row) => row.pass);
    expect(refused.length).toBeGreaterThan(10);
    for (const row of refused) expect(row.note).toMatch(/not \{"error":\{"code","message"\}\} JSON/);
    const moved = await runCheck(url.replace('/hook', '/moved'));
    expect(moved.report.rows.every((row) => row.reason.includes('redirect to http://127.0.0.1:1/x'))).toBe(
      true,
    );
    const run = await runCli(['check', url]);
    expect(run.code).toBe(1);
    expect(run.stdout).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
    expect(run.stdout).toContain('refused: \\x1b]0;pwned\\x07\\x9b2J');
  });

  it('sends URL credentials as Basic authorization and prints the password as ***', async () => {
    const handler = await ourHandler();
    const basic = `Basic ${Buffer.from('bot:s3cret').toString('base64')}`;
    const url = await serve((req, res) => {
      if (req.headers.authorization === basic) return handler(req, res);
      req.resume();
      res.writeHead(401).end();
    });
    const result = await runCheck(url.replace('http://', 'http://bot:s3cret@'));
    expect(failing(result)).toEqual([]);
    expect(result.report.url).toBe(url.replace('http://', 'http://bot:***@'));
    expect(JSON.stringify(result)).not.toContain('s3cret');
  });

  it('refuses a secret under 16 bytes as wrong usage, as send does', async () => {
    const run = await runCli(['check', 'http://127.0.0.1:1/', '--secret', 'whsec_abc']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--secret: a signing secret needs at least 16 bytes of key');
    expect(run.stderr).toContain("Run 'mediahook check --help' for usage.");
  });

  it('stops writing to a closed stdout without a trace, keeping exit 0', async () => {
    const url = await ourReceiver();
    for (const args of [
      ['check', url],
      ['check', url, '--json'],
    ]) {
      expect(await runCli(args, { closed: ['stdout'] })).toEqual({ code: 0, stdout: '', stderr: '' });
    }
  });
});
