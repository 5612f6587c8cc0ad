/**
 * What the `mediahook check` suites share: running check as a user does (JSON on stdout), and
 * receivers on 127.0.0.1 that each suite closes after each test.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createReceiver, MemoryReceiptStore, nodeHandler } from '../../src/receiver/index.ts';
import type { CheckRow } from '../../src/cli/check.ts';
import { BIN } from './helpers.ts';

export const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

interface CheckResult {
  code: number | null;
  report: {
    conforms: boolean;
    passed: number;
    failed: number;
    url: string;
    hint?: string;
    stopped?: string;
    unsent?: number;
    rows: CheckRow[];
  };
  stderr: string;
}

export function runCheck(url: string, extra: string[] = []): Promise<CheckResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, ['check', url, '--json', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve({ code, report: JSON.parse(stdout), stderr });
      } catch {
        reject(new Error(`check printed no JSON (exit ${code}): ${stdout} ${stderr}`));
      }
    });
  });
}

const cleanups: (() => Promise<void>)[] = [];

/** Closes what the last test opened; each suite calls it from its afterEach. */
export async function cleanUp(): Promise<void> {
  for (const cleanup of cleanups.splice(0)) await cleanup();
}

export async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    // A receiver that never answers keeps its connections: close would wait for them.
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

export async function ourHandler(options: Parameters<typeof createReceiver>[0] = {}) {
  const out = await mkdtemp(join(tmpdir(), 'mediahook-check-'));
  const receiver = createReceiver({ out, store: new MemoryReceiptStore(), ...options });
  cleanups.push(async () => {
    await receiver.close();
    await rm(out, { recursive: true, force: true });
  });
  return nodeHandler(receiver);
}

export async function ourReceiver(options: Parameters<typeof createReceiver>[0] = {}): Promise<string> {
  return serve(await ourHandler(options));
}

export function failing(result: CheckResult): string[] {
  return result.report.rows.filter((row) => !row.pass).map((row) => row.case);
}
