/**
 * The decoder fuzzer: valid bodies from fast-check (each must decode to what it says), then
 * mutations of them from a seeded loop and from fast-check (which shrinks what it finds). Every
 * body is checked by the oracle; the figures say what was run and what was found.
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { chunksOf, rng } from '../rng.ts';
import { type Expected, serialize, type ValidCase, validCaseArb } from './bodies.ts';
import { MUTATION_KINDS, type Mutated, type Mutation, mutate } from './mutate.ts';
import {
  agreesWithBusboy,
  busboyCallback,
  DecoderDefect,
  decode,
  type Decoded,
  type Outcome,
  readWithBusboy,
  reencodeProblem,
  sameOutcome,
  shapeProblem,
} from './oracle.ts';

export interface FuzzOptions {
  seed: number;
  /** Valid bodies checked whole, chunked and against busboy. */
  validRuns: number;
  /** Mutated bodies from the seeded loop. */
  mutations: number;
  /** Mutated bodies from fast-check's own generator (shrunk on failure). */
  propertyRuns: number;
  /** Valid bodies the loop mutates. */
  corpusSize?: number;
  /** Told every 1,000 bodies. */
  onProgress?: (done: number) => void;
}

export interface Finding {
  kind: string;
  detail: string;
  /** How to get the body again: the seed and index, or fast-check's counterexample. */
  replay: string;
  contentType: string | null;
  /** The body, base64 (cut at 4 KiB). */
  body: string;
}

export interface FuzzFigures {
  bodies: number;
  valid: number;
  mutated: number;
  accepted: number;
  refusedByCode: Record<string, number>;
  bothReadAsCallback: number;
  busboyShapeWeRefuse: Record<string, number>;
  weAcceptBusboyNot: number;
  maxDecodeMs: number;
  peakRssMb: number;
  seconds: number;
  findings: Finding[];
  /** A few examples of busboy reading a callback where we refuse, for the report. */
  strictnessExamples: Finding[];
}

/** Figures before any body: every count at zero. */
export function emptyFuzzFigures(): FuzzFigures {
  return {
    bodies: 0,
    valid: 0,
    mutated: 0,
    accepted: 0,
    refusedByCode: {},
    bothReadAsCallback: 0,
    busboyShapeWeRefuse: {},
    weAcceptBusboyNot: 0,
    maxDecodeMs: 0,
    peakRssMb: 0,
    seconds: 0,
    findings: [],
    strictnessExamples: [],
  };
}

/** Checks one body every way; returns what it found (nothing for a body that behaves). */
export async function checkBody(
  body: Mutated,
  figures: FuzzFigures,
  replay: string,
  chunkSeed: number,
  expected?: Expected,
): Promise<Finding[]> {
  const found: Finding[] = [];
  const finding = (kind: string, detail: string) =>
    found.push({
      kind,
      detail,
      replay,
      contentType: body.contentType,
      body: body.body.subarray(0, 4096).toString('base64'),
    });
  figures.bodies++;
  let whole: Outcome;
  const started = performance.now();
  try {
    whole = await decode(body.contentType, [body.body]);
    const random = rng(chunkSeed);
    // Byte by byte only for small bodies: the point is every split point, not the cost.
    const max = body.body.length < 4096 ? random.pick([1, 7, 64, 1500]) : random.pick([7, 64, 1500, 65536]);
    const chunked = await decode(body.contentType, chunksOf(body.body, random, max), random.chance(0.3));
    if (!sameOutcome(whole, chunked))
      finding('chunking_changes_outcome', `${describe(whole)} whole, ${describe(chunked)} in chunks`);
  } catch (error) {
    if (!(error instanceof DecoderDefect)) throw error;
    finding('decoder_defect', String(error.message));
    return found;
  } finally {
    figures.maxDecodeMs = Math.max(figures.maxDecodeMs, (performance.now() - started) / 2);
  }
  if (whole.ok) {
    figures.accepted++;
    const problem = shapeProblem(whole.callback) ?? (await reencodeProblem(whole.callback));
    if (problem) finding('invalid_accepted', problem);
  } else {
    figures.refusedByCode[whole.code] = (figures.refusedByCode[whole.code] ?? 0) + 1;
  }
  if (expected) {
    if (!whole.ok) finding('valid_refused', whole.code);
    else if (!matchesExpected(whole.callback, expected))
      finding('valid_misread', 'decoded differently from what was written');
  }
  const theirs = busboyCallback(await readWithBusboy(body.contentType, body.body));
  if (whole.ok && theirs) {
    figures.bothReadAsCallback++;
    const extended = /filename\*/i.test(body.body.toString('latin1'));
    if (!agreesWithBusboy(whole.callback, theirs, extended))
      finding('busboy_disagrees', 'both read a callback, not the same one');
  } else if (whole.ok) {
    figures.weAcceptBusboyNot++;
  } else if (theirs) {
    figures.busboyShapeWeRefuse[whole.code] = (figures.busboyShapeWeRefuse[whole.code] ?? 0) + 1;
    if (figures.strictnessExamples.filter((e) => e.kind === whole.code).length < 2) {
      figures.strictnessExamples.push({
        kind: whole.code,
        detail: 'busboy reads a callback',
        replay,
        contentType: body.contentType,
        body: body.body.subarray(0, 1024).toString('base64'),
      });
    }
  }
  return found;
}

function matchesExpected(decoded: Decoded, expected: Expected): boolean {
  const { file, ...texts } = decoded;
  const { file: want, ...wantTexts } = expected;
  if (!isDeepStrictEqual(texts, wantTexts)) return false;
  if (!file || !want) return file === want;
  return (
    file.part === want.part &&
    file.filename === want.filename &&
    file.declaredType === want.declaredType &&
    file.mediaType === want.mediaType &&
    file.content.equals(want.content)
  );
}

function describe(outcome: Outcome): string {
  return outcome.ok
    ? `accepted (${outcome.callback.family} ${outcome.callback.event})`
    : `refused ${outcome.code}`;
}

const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  op: fc.nat(MUTATION_KINDS - 1),
  a: fc.nat(),
  b: fc.nat(),
  c: fc.nat(),
});

function noteMemory(figures: FuzzFigures): void {
  figures.peakRssMb = Math.max(figures.peakRssMb, Math.round(process.memoryUsage().rss / 1048576));
}

/** Runs the three phases; stops early only when a phase's property fails. */
export async function runFuzz(options: FuzzOptions): Promise<FuzzFigures> {
  const figures = emptyFuzzFigures();
  const started = performance.now();
  const tick = () => {
    if (figures.bodies % 1000 === 0) {
      noteMemory(figures);
      options.onProgress?.(figures.bodies);
    }
  };
  // 1. Valid bodies: accepted, read as written, whatever the chunking.
  let last: Finding[] = [];
  const valid = await fc.check(
    fc.asyncProperty(validCaseArb, fc.nat(), async ({ spec, expected }, chunkSeed) => {
      figures.valid++;
      const found = await checkBody(
        { contentType: spec.contentType, body: serialize(spec) },
        figures,
        'valid',
        chunkSeed,
        expected,
      );
      tick();
      if (found.length > 0) last = found;
      return found.length === 0;
    }),
    { seed: options.seed, numRuns: options.validRuns, endOnFailure: true },
  );
  if (valid.failed) report(figures, last, 'valid', valid.counterexample);
  // 2. The seeded loop: a corpus of valid bodies, each mutated one to four times at random.
  const corpus: ValidCase[] = fc.sample(validCaseArb, {
    seed: options.seed + 1,
    numRuns: options.corpusSize ?? 400,
  });
  const random = rng(options.seed + 2);
  for (let i = 0; i < options.mutations; i++) {
    const base = random.int(corpus.length);
    const mutations = Array.from({ length: random.range(1, 4) }, () => ({
      op: random.int(MUTATION_KINDS),
      a: random.int(2 ** 31),
      b: random.int(2 ** 31),
      c: random.int(2 ** 31),
    }));
    figures.mutated++;
    const replay = `seed ${options.seed} mutation ${i}: corpus[${base}] ${JSON.stringify(mutations)}`;
    figures.findings.push(...(await checkBody(mutate(corpus[base]!.spec, mutations), figures, replay, i)));
    tick();
  }
  // 3. fast-check draws the body and the mutations itself, and shrinks a failure to its core.
  const mutated = await fc.check(
    fc.asyncProperty(
      validCaseArb,
      fc.array(mutationArb, { minLength: 1, maxLength: 4 }),
      fc.nat(),
      async (base, mutations, chunkSeed) => {
        figures.mutated++;
        const found = await checkBody(mutate(base.spec, mutations), figures, 'property', chunkSeed);
        tick();
        if (found.length > 0) last = found;
        return found.length === 0;
      },
    ),
    { seed: options.seed + 3, numRuns: options.propertyRuns, endOnFailure: true },
  );
  if (mutated.failed) report(figures, last, 'property', mutated.counterexample);
  noteMemory(figures);
  figures.seconds = Math.round((performance.now() - started) / 100) / 10;
  return figures;
}

/**
 * Keeps the findings of a failed property's smallest counterexample (the last one fast-check
 * tried while shrinking), pointed at that counterexample.
 */
function report(figures: FuzzFigures, last: Finding[], phase: string, counterexample: unknown): void {
  const text = JSON.stringify(counterexample, (_key, value: unknown) =>
    value && typeof value === 'object' && (value as { type?: string }).type === 'Buffer'
      ? `<${((value as { data: number[] }).data ?? []).length} bytes>`
      : value,
  ).slice(0, 2000);
  for (const finding of last) figures.findings.push({ ...finding, replay: `${phase}, shrunk: ${text}` });
}

/** What is wrong with a fuzz run; empty when the decoder held. */
export function fuzzProblems(f: FuzzFigures): string[] {
  const kinds = new Map<string, number>();
  for (const finding of f.findings) kinds.set(finding.kind, (kinds.get(finding.kind) ?? 0) + 1);
  return [...kinds].map(([kind, n]) => {
    const first = f.findings.find((x) => x.kind === kind)!;
    return `${n} × ${kind}: ${first.detail} (replay: ${first.replay.slice(0, 400)})`;
  });
}
