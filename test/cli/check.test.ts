/**
 * `mediahook check` passes a conforming receiver and fails, on the right rows, receivers that
 * are deliberately broken: one that accepts everything, one that rejects MP4, one that is not
 * idempotent.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createReceiver, MemoryReceiptStore, nodeHandler, type Receipt } from '../../src/receiver/index.ts';
import { BIN } from './helpers.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

interface CheckResult {
  code: number | null;
  report: {
    conforms: boolean;
    passed: number;
    failed: number;
    rows: { case: string; pass: boolean; reason: string }[];
  };
}

function runCheck(url: string, extra: string[] = []): Promise<CheckResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, ['check', url, '--json', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve({ code, report: JSON.parse(stdout) });
      } catch {
        reject(new Error(`check printed no JSON (exit ${code}): ${stdout} ${stderr}`));
      }
    });
  });
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

async function ourReceiver(options: Parameters<typeof createReceiver>[0] = {}): Promise<string> {
  const out = await mkdtemp(join(tmpdir(), 'mediahook-check-'));
  const receiver = createReceiver({ out, store: new MemoryReceiptStore(), ...options });
  cleanups.push(async () => {
    await receiver.close();
    await rm(out, { recursive: true, force: true });
  });
  return serve(nodeHandler(receiver));
}

function failing(result: CheckResult): string[] {
  return result.report.rows.filter((row) => !row.pass).map((row) => row.case);
}

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

  it('fails a receiver that accepts everything, on every malformed row', async () => {
    const url = await serve((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    const result = await runCheck(url);
    expect(result.code).toBe(1);
    const rows = result.report.rows;
    expect(rows.filter((row) => row.pass).map((row) => row.case)).toEqual(
      rows.slice(0, 6).map((row) => row.case),
    );
    expect(rows.slice(6).every((row) => row.reason === 'an invalid callback was accepted')).toBe(true);
    expect(failing(result)).toContain('an MP4 in family B');
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

  it('fails every row, with the reason, when nothing listens', async () => {
    const url = await serve(() => {});
    cleanups.splice(0).forEach((cleanup) => void cleanup());
    await new Promise((resolve) => setTimeout(resolve, 100));
    const result = await runCheck(url, ['--timeout', '2s']);
    expect(result.code).toBe(1);
    expect(result.report.rows.every((row) => !row.pass && row.reason.startsWith('no answer'))).toBe(true);
  });
});
