import { once } from 'node:events';
import { Busboy as FastifyBusboy } from '@fastify/busboy';
import busboy from 'busboy';
import { Request } from 'undici';
import { CallbackDecoder } from '../packages/mediahook/src/protocol/index.ts';
import { type Body, type BodyKind, CHUNK_BYTES, makeBody } from './bodies.ts';
import {
  type Check,
  emptyRuns,
  fullGc,
  interleave,
  type Measure,
  measuresOver,
  peakRssMiB,
  ratioCheck,
  resetPeakRss,
  rssMiB,
  type Suite,
  type SuiteContext,
  type SuiteResult,
  seconds,
} from './harness.ts';

const CONTENDERS = ['ours', 'busboy', '@fastify/busboy', 'undici'] as const;
type Contender = (typeof CONTENDERS)[number];
/**
 * Not a contender but a yardstick, timed with them: how fast a bare search for the delimiter
 * goes over the same chunks. No parser that searches with Buffer#indexOf can be faster.
 */
const SCAN = 'indexOf-only';
type Runner = Contender | typeof SCAN;
const PEERS = [...CONTENDERS.slice(1), SCAN];

const measure = measuresOver(PEERS);

/** What each contender must find in a body; compared with what the body was built from. */
interface Decoded {
  status: string;
  id_gen: string;
  time_gen: string;
  fileBytes: number;
  filename: string;
}

/** The body as a socket would deliver it: one chunk at a time, each after an await. */
async function* source(chunks: readonly Buffer[]): AsyncGenerator<Buffer> {
  for (const chunk of chunks) yield chunk;
}

async function decodeOurs(body: Body): Promise<Decoded> {
  const decoder = new CallbackDecoder(body.contentType, { hash: false });
  for await (const chunk of source(body.chunks)) {
    const pending = decoder.write(chunk);
    if (pending) await pending;
  }
  const callback = await decoder.end();
  if (callback.event !== 'success') throw new Error('ours decoded an error callback');
  const { status, id_gen, time_gen } = callback;
  return { status, id_gen, time_gen, fileBytes: callback.file.bytes, filename: callback.file.filename };
}

/** Feeds a Writable the way `source.pipe(writable)` does: wait for 'drain' when it asks. */
async function feed(writable: NodeJS.WritableStream, body: Body): Promise<void> {
  for await (const chunk of source(body.chunks)) {
    if (!writable.write(chunk)) await once(writable, 'drain');
  }
  writable.end();
}

function emptyDecoded(): Decoded {
  return { status: '', id_gen: '', time_gen: '', fileBytes: 0, filename: '' };
}

function setField(decoded: Decoded, name: string, value: string): void {
  if (name === 'status' || name === 'id_gen' || name === 'time_gen') decoded[name] = value;
}

async function decodeBusboy(body: Body): Promise<Decoded> {
  const decoded = emptyDecoded();
  const parser = busboy({ headers: { 'content-type': body.contentType } });
  parser.on('field', (name, value) => setField(decoded, name, value));
  parser.on('file', (_name, stream, info) => {
    decoded.filename = info.filename ?? '';
    stream.on('data', (data: Buffer) => {
      decoded.fileBytes += data.length;
    });
  });
  const done = once(parser, 'close');
  await feed(parser, body);
  await done;
  return decoded;
}

async function decodeFastifyBusboy(body: Body): Promise<Decoded> {
  const decoded = emptyDecoded();
  const parser = new FastifyBusboy({ headers: { 'content-type': body.contentType } });
  parser.on('field', (name, value) => setField(decoded, name, value));
  parser.on('file', (_name, stream, filename) => {
    decoded.filename = filename;
    stream.on('data', (data: Buffer) => {
      decoded.fileBytes += data.length;
    });
  });
  const done = once(parser, 'finish');
  await feed(parser, body);
  await done;
  return decoded;
}

async function decodeUndici(body: Body): Promise<Decoded> {
  const request = new Request('http://127.0.0.1/callback', {
    method: 'POST',
    body: source(body.chunks),
    headers: { 'content-type': body.contentType },
    duplex: 'half',
  });
  const form = await request.formData();
  const decoded = emptyDecoded();
  for (const [name, value] of form) {
    if (typeof value === 'string') setField(decoded, name, value);
    else {
      // formData() has already read the whole file into memory; its size is what it parsed.
      decoded.filename = value.name;
      decoded.fileBytes = value.size;
    }
  }
  return decoded;
}

/** The yardstick: every delimiter found with Buffer#indexOf, chunk by chunk; nothing else. */
async function scanOnly(body: Body): Promise<number> {
  const delimiter = Buffer.from(`\r\n--${body.boundary}`, 'latin1');
  let found = 0;
  for await (const chunk of source(body.chunks)) {
    for (let at = chunk.indexOf(delimiter); at >= 0; at = chunk.indexOf(delimiter, at + delimiter.length)) {
      found++;
    }
  }
  return found;
}

const DECODERS: Record<Contender, (body: Body) => Promise<Decoded>> = {
  ours: decodeOurs,
  busboy: decodeBusboy,
  '@fastify/busboy': decodeFastifyBusboy,
  undici: decodeUndici,
};

/** Decodes `body` `iterations` times, checking every result: a fast wrong parse counts for nothing. */
async function decodeRepeatedly(contender: Runner, body: Body, iterations: number): Promise<void> {
  if (contender === SCAN) {
    for (let i = 0; i < iterations; i++) await scanOnly(body);
    return;
  }
  for (let i = 0; i < iterations; i++) {
    const got = await DECODERS[contender](body);
    const want = body.expect;
    for (const key of ['status', 'id_gen', 'time_gen', 'fileBytes', 'filename'] as const) {
      if (got[key] !== want[key]) {
        throw new Error(`${contender} on ${body.label}: ${key} is ${got[key]}, expected ${want[key]}`);
      }
    }
  }
}

interface Case {
  kind: BodyKind;
  fileBytes: number;
  /** Decodes per timed run: enough for a small body to take a measurable time. */
  iterations: number;
}

/**
 * Each timed run decodes at least ~128 MiB (64 MiB with --quick): a run of a few milliseconds
 * would measure the scheduler of a shared machine more than the decoder.
 */
function casesFor(quick: boolean): Case[] {
  const MiB = 2 ** 20;
  return [
    { kind: 'mp4', fileBytes: (quick ? 64 : 256) * MiB, iterations: 1 },
    { kind: 'jpeg', fileBytes: 64 * 1024, iterations: quick ? 1000 : 3000 },
    { kind: 'adversarial', fileBytes: (quick ? 8 : 32) * MiB, iterations: quick ? 8 : 4 },
  ];
}

interface RssFigures {
  /** Peak RSS of the whole child process, body included. */
  peak: number;
  /** Peak RSS minus the RSS right before decoding: what decoding itself added. */
  growth: number;
}

/** A bound on what decoding may add to the RSS: well under what buffering the file would take. */
const FLAT_MIB = 16;

async function run(ctx: SuiteContext): Promise<SuiteResult> {
  const rounds = ctx.quick ? 5 : 11;
  const rssRuns = ctx.quick ? 1 : 3;
  const measures: Measure[] = [];
  const checks: Check[] = [];
  for (const c of casesFor(ctx.quick)) {
    const body = await makeBody(c.kind, c.fileBytes);
    const title = c.iterations > 1 ? `${body.label} ×${c.iterations}` : body.label;
    const runners: Runner[] = [...CONTENDERS, SCAN];
    ctx.log(`${title}: throughput, ${rounds} rounds of ${runners.join(', ')}`);
    const runs = await interleave(runners, rounds, 1, async (runner) => {
      const time = await seconds(() => decodeRepeatedly(runner, body, c.iterations));
      return (body.bytes * c.iterations) / time / 1e6;
    });
    const throughput = measure(`${c.kind}.throughput`, `${body.label}: throughput`, 'MB/s', 'higher', runs);
    measures.push(throughput);
    if (c.kind === 'jpeg') {
      const perSecond = mapRuns(runs, (mbps) => (mbps * 1e6) / body.bytes);
      measures.push(measure(`${c.kind}.rate`, `${body.label}: callbacks/s`, '1/s', 'higher', perSecond));
    }
    // The children build their own body; this one would only add to the parent's footprint.
    body.chunks.length = 0;
    fullGc();

    ctx.log(`${title}: peak RSS, ${rssRuns} child process(es) per contender`);
    const { peak, growth } = await rssRunsOf(ctx, c, rssRuns);
    measures.push(measure(`${c.kind}.rss`, `${body.label}: peak RSS`, 'MiB', 'lower', peak));
    const grown = measure(`${c.kind}.rssGrowth`, `${body.label}: RSS growth`, 'MiB', 'lower', growth);
    grown.floor = 1;
    measures.push(grown);

    if (c.kind === 'mp4') {
      checks.push(ratioCheck(`ours ≥ 2× busboy on ${body.label}`, throughput, 'busboy', 2));
      checks.push(
        ratioCheck(`ours ≥ 1.2× @fastify/busboy on ${body.label}`, throughput, '@fastify/busboy', 1.2),
      );
      checks.push({
        label: `ours: flat memory on ${body.label} (RSS growth ≤ ${FLAT_MIB} MiB)`,
        value: grown.ours === null ? '—' : `${grown.ours.toFixed(1)} MiB`,
        pass: grown.ours === null ? null : grown.ours <= FLAT_MIB,
      });
    }
  }
  const notes = [
    `bodies are fed in ${CHUNK_BYTES / 1024} KiB chunks from memory; MB = 10^6 bytes`,
    `throughput: median of ${rounds} interleaved runs after 1 warm-up round; ` +
      `RSS: median of ${rssRuns} child process(es) per contender`,
    'RSS growth: peak RSS while decoding minus the RSS just before, in a child that holds the body',
    `${SCAN}: not a parser; a bare Buffer#indexOf search for the delimiter over the same chunks, ` +
      'timed with the others: the ceiling of any parser that searches with indexOf',
  ];
  return { contenders: ['ours', ...PEERS], measures, checks, notes };
}

/** Peak RSS and RSS growth of each contender, one fresh child per run, contenders rotated. */
async function rssRunsOf(
  ctx: SuiteContext,
  c: Case,
  rssRuns: number,
): Promise<{ peak: Record<string, number[]>; growth: Record<string, number[]> }> {
  const peak = emptyRuns(CONTENDERS);
  const growth = emptyRuns(CONTENDERS);
  for (let r = 0; r < rssRuns; r++) {
    for (let i = 0; i < CONTENDERS.length; i++) {
      const contender = CONTENDERS[(i + r) % CONTENDERS.length]!;
      const args = [c.kind, String(c.fileBytes), String(c.iterations), contender];
      const got = await ctx.child<RssFigures>(args);
      peak[contender]!.push(got.peak);
      growth[contender]!.push(got.growth);
    }
  }
  return { peak, growth };
}

function mapRuns(runs: Record<string, number[]>, fn: (value: number) => number): Record<string, number[]> {
  return Object.fromEntries(Object.entries(runs).map(([c, values]) => [c, values.map(fn)]));
}

/**
 * In a fresh process: builds one body, then decodes it with one contender and reports the peak
 * RSS. The body is built before the baseline is taken, so `growth` is decoding's own memory.
 */
async function child(args: string[]): Promise<RssFigures> {
  const [kind, fileBytes, iterations, contender] = args as [BodyKind, string, string, Contender];
  if (!DECODERS[contender]) throw new Error(`unknown contender ${contender}`);
  const body = await makeBody(kind, Number(fileBytes));
  fullGc();
  const built = peakRssMiB();
  const before = rssMiB();
  const reset = resetPeakRss();
  await decodeRepeatedly(contender, body, Number(iterations));
  const peak = peakRssMiB();
  // Without a reset (not Linux) the peak may predate decoding: growth is then an upper bound.
  if (!reset) process.stderr.write('peak RSS cannot be reset here; RSS growth is an upper bound\n');
  return { peak: Math.max(built, peak), growth: Math.max(0, peak - before) };
}

export const suite: Suite = {
  name: 'decode',
  description: 'decoding a callback body from memory: ours vs busboy, @fastify/busboy, undici formData()',
  run,
  child,
};
