import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** What a suite is told about the run. */
export interface SuiteContext {
  quick: boolean;
  /** Progress lines, printed as the suite goes. */
  log(line: string): void;
  /**
   * Runs `args` through this suite's {@link Suite.child} in a fresh Node process (same loader) and
   * returns what it returned: a clean heap for memory figures.
   */
  child<T>(args: string[]): Promise<T>;
}

/** A goal of the project checked against the figures: shown as PASS or BELOW, never fails the run. */
export interface Check {
  label: string;
  /** The figure the goal is about, as printed (e.g. `3.1×`). */
  value: string;
  /** null when the figure is missing. */
  pass: boolean | null;
}

/** One row of the results: our figure against each peer's. */
export interface Measure {
  /** Stable key, e.g. `mp4.throughput`. */
  id: string;
  label: string;
  unit: string;
  better: 'higher' | 'lower';
  ours: number | null;
  /** null when the peer was not run for this measure (see notes). */
  peers: Record<string, number | null>;
  /**
   * Figures below this are noise (e.g. an RSS growth under 1 MiB): shown, but no ratio is taken,
   * since dividing two noises says nothing.
   */
  floor?: number | undefined;
  /** Every run's figure by contender, the median of which is the figure. */
  runs: Record<string, number[]>;
}

export interface SuiteResult {
  /** Contenders in display order; the first is ours. */
  contenders: string[];
  measures: Measure[];
  checks: Check[];
  /** What a reader must know to read the figures, e.g. a contender skipped. */
  notes: string[];
}

/** A benchmark suite: one file under bench/, registered by name in run.ts. */
export interface Suite {
  name: string;
  description: string;
  run(ctx: SuiteContext): Promise<SuiteResult>;
  /** Entry point inside a child process started by {@link SuiteContext.child}. */
  child?(args: string[]): Promise<unknown>;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** ours/peer, or null when either is missing or below the measure's noise floor. */
export function ratio(ours: number | null, peer: number | null, floor = 1e-9): number | null {
  if (ours === null || peer === null || ours < floor || peer < floor) return null;
  return ours / peer;
}

let collect: (() => void) | null = null;

/** An empty list of runs for each contender. */
export function emptyRuns(contenders: readonly string[]): Record<string, number[]> {
  return Object.fromEntries(contenders.map((c) => [c, [] as number[]]));
}

/** Makes a suite's measures: ours' median and each of `peers`' medians, from every contender's runs. */
export function measuresOver(peers: readonly string[]) {
  return (
    id: string,
    label: string,
    unit: string,
    better: 'higher' | 'lower',
    runs: Record<string, number[]>,
  ) => {
    const medians: Record<string, number | null> = {};
    for (const peer of peers) medians[peer] = median(runs[peer] ?? []);
    const m: Measure = { id, label, unit, better, ours: median(runs.ours ?? []), peers: medians, runs };
    return m;
  };
}

/** A target that ours' figure be at least `atLeast` times a peer's. */
export function ratioCheck(label: string, m: Measure, peer: string, atLeast: number): Check {
  const value = ratio(m.ours, m.peers[peer] ?? null);
  return {
    label,
    value: value === null ? '—' : `${value.toFixed(2)}×`,
    pass: value === null ? null : value >= atLeast,
  };
}

/**
 * A full garbage collection between timed runs, so one contender's garbage is not collected on
 * the next one's clock. `--expose-gc` cannot be passed through `tsx`, hence the flag at run time.
 */
export function fullGc(): void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
}

/**
 * Runs each contender `rounds` times after `warmup` untimed rounds, interleaved (A B C, B C A, …)
 * so that drift of the machine (thermal, other load) spreads over all contenders alike. `run`
 * returns the figure of one run. Returns every timed figure by contender.
 */
export async function interleave<C extends string>(
  contenders: readonly C[],
  rounds: number,
  warmup: number,
  run: (contender: C, timed: boolean) => Promise<number>,
): Promise<Record<C, number[]>> {
  const figures = Object.fromEntries(contenders.map((c) => [c, [] as number[]])) as Record<C, number[]>;
  for (let round = 0; round < warmup + rounds; round++) {
    const timed = round >= warmup;
    for (let i = 0; i < contenders.length; i++) {
      const contender = contenders[(i + round) % contenders.length]!;
      fullGc();
      const figure = await run(contender, timed);
      if (timed) figures[contender].push(figure);
    }
  }
  return figures;
}

/** Wall time of `fn` in seconds. */
export async function seconds(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return (performance.now() - start) / 1000;
}

/**
 * The 1-minute load average: other work on the machine steals time from timed runs, so it is
 * printed and kept with the results.
 */
export function load(): number {
  return Math.round(loadavg()[0]! * 100) / 100;
}

/** Node version, CPU model and core count: printed with every result. */
export function machine(): { node: string; cpu: string; cores: number; platform: string } {
  const list = cpus();
  return {
    node: process.version,
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    platform: `${process.platform} ${process.arch}`,
  };
}

/** The flag that makes run.ts act as a child of a suite. */
export const CHILD_FLAG = '--child';

/**
 * Starts this same script as a child with `--child <suite> …args`, inheriting the loader flags
 * (tsx), and parses the JSON the child prints as its last line of stdout.
 */
export function runChild<T>(suite: string, args: string[]): Promise<T> {
  const script = process.argv[1]!;
  return new Promise<T>((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, script, CHILD_FLAG, suite, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => {
      out += text;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`child ${suite} ${args.join(' ')} exited with ${code}`));
      const last = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`child ${suite} ${args.join(' ')} printed no JSON result: ${last.slice(0, 200)}`));
      }
    });
  });
}

function procStatusKiB(field: 'VmHWM' | 'VmRSS'): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/**
 * Peak resident set size of this process, in MiB. On Linux it is read from /proc (VmHWM) and
 * not from `resourceUsage().maxRSS`: a spawned child's maxRSS starts at its parent's peak, which
 * here holds 256 MiB bodies, and would hide the child's own figure.
 */
export function peakRssMiB(): number {
  return (procStatusKiB('VmHWM') ?? process.resourceUsage().maxRSS) / 1024;
}

/** Current resident set size, in MiB. */
export function rssMiB(): number {
  return process.memoryUsage.rss() / 2 ** 20;
}

/**
 * Resets the peak RSS to the current RSS (Linux ≥ 4.0), so that the next {@link peakRssMiB} tells
 * the peak of what follows only. Returns false where that is not possible.
 */
export function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}
