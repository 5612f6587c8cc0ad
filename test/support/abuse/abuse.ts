/**
 * Abuse of `mediahook listen`: the hostile bodies of cases.ts, slowloris connections while
 * valid callbacks keep coming, and a disk that fails under the receiver. Every hostile request
 * must get its clear answer, the process must stay up, and nothing may be written but what a
 * valid callback stores, where it belongs.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type AbuseCase, abuseCases } from './cases.ts';
import { runDiskFaults, type DiskFigures } from './disk.ts';
import { BOOKKEEPING, startListen } from './listen-process.ts';
import { errorCode, postHead, rawRequest } from './raw-http.ts';
import { runSlowloris, type SlowlorisFigures } from './slowloris.ts';
import { tempDir } from '../processes.ts';

interface AbuseOptions {
  slowlorisConnections: number;
  slowlorisMs: number;
  /** Valid callbacks sent while the slowloris connections are open. */
  validDuringSlowloris: number;
}

interface CaseResult {
  name: string;
  expected: string;
  got: string;
  ok: boolean;
}

interface AbuseFigures {
  cases: CaseResult[];
  failures: string[];
  /** Files in the output directory other than the receiver's `.mediahook` folder of receipts. */
  storedFiles: number;
  expectedStoredFiles: number;
  /** Anything written outside the output directory (must be empty). */
  strayFiles: string[];
  peakRssMb: number;
  slowloris: SlowlorisFigures;
  disk: DiskFigures;
  exitCode: number | string;
  seconds: number;
}

export async function runAbuse(options: AbuseOptions): Promise<AbuseFigures> {
  const started = performance.now();
  const root = await tempDir('abuse');
  const out = join(root.path, 'out');
  await mkdir(out);
  const listen = await startListen(out);
  const failures: string[] = [];
  const results: CaseResult[] = [];
  const evilBefore = existsSync('/tmp/evil.jpg') || existsSync('/tmp/evil');
  const cases = abuseCases(randomBytes(4).toString('hex'));
  try {
    for (const item of cases) {
      const result = await sendCase(listen.port, item);
      results.push(result);
      if (!result.ok) failures.push(`${item.name}: expected ${result.expected}, got ${result.got}`);
      if (!(await listen.alive())) {
        failures.push(`the receiver died on: ${item.name}`);
        break;
      }
      const names = await readdir(out);
      const partial = names.filter((name) => name.endsWith('.part'));
      if (partial.length > 0) failures.push(`after ${item.name}: partial files ${partial.join(', ')}`);
      if (item.storedAs && !names.some((name) => item.storedAs!.test(name))) {
        failures.push(`${item.name}: no file named like ${item.storedAs} in the output directory`);
      }
    }
    const slowloris = await runSlowloris(listen, {
      connections: options.slowlorisConnections,
      holdMs: options.slowlorisMs,
      valid: options.validDuringSlowloris,
    });
    failures.push(...slowloris.failures);
    if (slowloris.accepted !== slowloris.validSent) {
      failures.push(
        `${slowloris.validSent - slowloris.accepted} valid callbacks were not accepted during slowloris`,
      );
    }
    const names = (await readdir(out)).filter((name) => !BOOKKEEPING.has(name));
    const expectedStoredFiles = cases.filter((c) => c.storedAs).length + slowloris.filesStored;
    if (names.length !== expectedStoredFiles) {
      failures.push(
        `the output directory holds ${names.length} files, not ${expectedStoredFiles}: ${names.join(', ')}`,
      );
    }
    // Nothing beside the output directory, and no file that a traversal aimed at.
    const strayFiles = (await readdir(root.path)).filter((name) => name !== 'out');
    if (!evilBefore && (existsSync('/tmp/evil.jpg') || existsSync('/tmp/evil')))
      strayFiles.push('/tmp/evil*');
    failures.push(...strayFiles.map((name) => `written outside the output directory: ${name}`));
    const peakRssMb = listen.peakRssMb();
    const exitCode = await listen.stop();
    if (exitCode !== 0) failures.push(`listen exited ${exitCode} on SIGTERM`);
    const disk = await runDiskFaults(root.path);
    failures.push(...disk.failures);
    return {
      cases: results,
      failures,
      storedFiles: names.length,
      expectedStoredFiles,
      strayFiles,
      peakRssMb,
      slowloris,
      disk,
      exitCode,
      seconds: Math.round((performance.now() - started) / 100) / 10,
    };
  } finally {
    await listen.stop();
    await root.remove();
  }
}

async function sendCase(port: number, item: AbuseCase): Promise<CaseResult> {
  // Written in 64 KiB pieces, so a refusal midway is seen as the server's early answer.
  const chunks: Buffer[] = [];
  for (let at = 0; at < item.body.length; at += 65536) chunks.push(item.body.subarray(at, at + 65536));
  const answer = await rawRequest(port, postHead(item.contentType, item.body.length), chunks);
  const code = errorCode(answer);
  const expected = item.expect.code ? `${item.expect.status} ${item.expect.code}` : `${item.expect.status}`;
  const got = answer.status === null ? 'no answer' : code ? `${answer.status} ${code}` : `${answer.status}`;
  return { name: item.name, expected, got, ok: expected === got };
}
