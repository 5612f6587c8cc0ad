/**
 * The long fuzz run: {@link runFuzz} in one child process per core, each on its own seeds,
 * watched for progress (a shard silent for two minutes is a hang: it is killed and reported),
 * and the figures merged.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FuzzFigures, FuzzOptions } from '../../test/support/fuzz/fuzz.ts';

const SHARD = fileURLToPath(new URL('./shard.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SILENCE_MS = 120_000;

export interface LongFuzzOptions {
  /** Bodies in all, over every shard (valid, loop and property bodies together). */
  bodies: number;
  shards: number;
  seed: number;
  log?: (line: string) => void;
}

function runShard(options: FuzzOptions, log: (line: string) => void): Promise<FuzzFigures> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SHARD, JSON.stringify(options)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let figures: FuzzFigures | undefined;
    let lastProgress = 0;
    let watchdog = setTimeout(hang, SILENCE_MS);
    function hang() {
      child.kill('SIGKILL');
      reject(
        new Error(
          `fuzz shard ${options.seed} made no progress for ${SILENCE_MS / 1000} s after ${lastProgress} bodies: a hang`,
        ),
      );
    }
    let pending = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      pending += text;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        clearTimeout(watchdog);
        watchdog = setTimeout(hang, SILENCE_MS);
        if (line.startsWith('progress ')) {
          lastProgress = Number(line.slice(9));
          if (lastProgress % 50_000 === 0) log(`shard ${options.seed}: ${lastProgress} bodies`);
        } else if (line.startsWith('figures ')) {
          figures = JSON.parse(line.slice(8)) as FuzzFigures;
        }
      }
    });
    child.on('exit', (code) => {
      clearTimeout(watchdog);
      if (figures) resolve(figures);
      else reject(new Error(`fuzz shard ${options.seed} exited ${code} without figures`));
    });
  });
}

function add(into: Record<string, number>, from: Record<string, number>): void {
  for (const [key, n] of Object.entries(from)) into[key] = (into[key] ?? 0) + n;
}

export async function runLongFuzz(options: LongFuzzOptions): Promise<FuzzFigures> {
  const started = performance.now();
  const per = Math.ceil(options.bodies / options.shards);
  const shards = await Promise.all(
    Array.from({ length: options.shards }, (_, k) =>
      runShard(
        {
          seed: options.seed + 1000 * k,
          validRuns: Math.round(per * 0.02),
          propertyRuns: Math.round(per * 0.08),
          mutations: Math.round(per * 0.9),
          corpusSize: 1000,
        },
        options.log ?? (() => {}),
      ),
    ),
  );
  const merged = shards.reduce((total, shard) => {
    add(total.refusedByCode, shard.refusedByCode);
    add(total.busboyShapeWeRefuse, shard.busboyShapeWeRefuse);
    return {
      ...total,
      bodies: total.bodies + shard.bodies,
      valid: total.valid + shard.valid,
      mutated: total.mutated + shard.mutated,
      accepted: total.accepted + shard.accepted,
      bothReadAsCallback: total.bothReadAsCallback + shard.bothReadAsCallback,
      weAcceptBusboyNot: total.weAcceptBusboyNot + shard.weAcceptBusboyNot,
      maxDecodeMs: Math.max(total.maxDecodeMs, shard.maxDecodeMs),
      peakRssMb: Math.max(total.peakRssMb, shard.peakRssMb),
      findings: [...total.findings, ...shard.findings],
      strictnessExamples: [...total.strictnessExamples, ...shard.strictnessExamples].slice(0, 20),
    };
  });
  return { ...merged, seconds: Math.round((performance.now() - started) / 100) / 10 };
}
