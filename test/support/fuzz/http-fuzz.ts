/**
 * The fuzzer over HTTP: valid and mutated bodies posted to a `mediahook listen` process. Each
 * answer must be what the in-process decoder says of the same bytes (200 for a callback, else
 * 500 with the same code), one NDJSON record per request, the process alive throughout, and
 * no partial file left in its output directory.
 */
import fc from 'fast-check';
import { readdir } from 'node:fs/promises';
import { startListen } from '../abuse/listen-process.ts';
import { errorCode, postHead, rawRequest } from '../abuse/raw-http.ts';
import { tempDir } from '../processes.ts';
import { rng } from '../rng.ts';
import { type BodySpec, validCaseArb } from './bodies.ts';
import { MUTATION_KINDS, mutate } from './mutate.ts';
import { decode } from './oracle.ts';

interface HttpFuzzFigures {
  requests: number;
  accepted: number;
  refusedByCode: Record<string, number>;
  disagreements: { replay: string; expected: string; got: string }[];
  records: number;
  partialFiles: number;
  storedFiles: number;
  receiverAlive: boolean;
  peakRssMb: number;
  seconds: number;
}

/** Gives every body of the corpus an `id_gen` of its own, so acceptance is not a duplicate. */
function withId(spec: BodySpec, id: string): BodySpec {
  return {
    ...spec,
    parts: spec.parts.map((part) =>
      part.headers.some((h) => /name="?id_gen"?(;|\s|$)/i.test(h))
        ? { ...part, body: Buffer.from(id) }
        : part,
    ),
  };
}

export async function runHttpFuzz(options: {
  requests: number;
  seed: number;
  concurrency?: number;
}): Promise<HttpFuzzFigures> {
  const started = performance.now();
  const out = await tempDir('http-fuzz');
  const listen = await startListen(out.path);
  const corpus = fc
    .sample(validCaseArb, { seed: options.seed, numRuns: 300 })
    .map((c, n) => withId(c.spec, `http-fuzz-${options.seed}-${n}`));
  const random = rng(options.seed + 1);
  const figures: HttpFuzzFigures = {
    requests: 0,
    accepted: 0,
    refusedByCode: {},
    disagreements: [],
    records: 0,
    partialFiles: 0,
    storedFiles: 0,
    receiverAlive: false,
    peakRssMb: 0,
    seconds: 0,
  };
  const jobs = Array.from({ length: options.requests }, (_, i) => {
    const base = random.int(corpus.length);
    // One in five goes unmutated: valid bodies must be accepted over HTTP too.
    const count = random.chance(0.2) ? 0 : random.range(1, 3);
    const mutations = Array.from({ length: count }, () => ({
      op: random.int(MUTATION_KINDS),
      a: random.int(2 ** 31),
      b: random.int(2 ** 31),
      c: random.int(2 ** 31),
    }));
    return { i, base, mutations };
  });
  try {
    await Promise.all(
      Array.from({ length: options.concurrency ?? 4 }, async () => {
        for (let job = jobs.shift(); job; job = jobs.shift()) {
          const body = mutate(corpus[job.base]!, job.mutations);
          const local = await decode(body.contentType, [body.body]);
          const expected = local.ok ? '200' : `500 ${local.code}`;
          const chunks: Buffer[] = [];
          for (let at = 0; at < body.body.length; at += 65536)
            chunks.push(body.body.subarray(at, at + 65536));
          const answer = await rawRequest(listen.port, postHead(body.contentType, body.body.length), chunks);
          const got = answer.status === 200 ? '200' : `${answer.status} ${errorCode(answer)}`;
          figures.requests++;
          if (local.ok) figures.accepted++;
          else figures.refusedByCode[local.code] = (figures.refusedByCode[local.code] ?? 0) + 1;
          if (got !== expected) {
            figures.disagreements.push({
              replay: `seed ${options.seed} request ${job.i}: corpus[${job.base}] ${JSON.stringify(job.mutations)}`,
              expected,
              got,
            });
          }
        }
      }),
    );
    figures.receiverAlive = await listen.alive();
    figures.peakRssMb = listen.peakRssMb();
    const names = await readdir(out.path);
    figures.partialFiles = names.filter((n) => n.endsWith('.part')).length;
    figures.storedFiles = names.filter((n) => /\.(jpg|mp4)$/.test(n)).length;
  } finally {
    await listen.stop();
    figures.records = listen.records.length;
    await out.remove();
    figures.seconds = Math.round((performance.now() - started) / 100) / 10;
  }
  return figures;
}

/** What is wrong with an HTTP fuzz run; empty when the receiver answered as the decoder says. */
export function httpFuzzProblems(f: HttpFuzzFigures, requests: number): string[] {
  const problems: string[] = [];
  if (f.requests !== requests) problems.push(`${f.requests} of ${requests} requests sent`);
  for (const d of f.disagreements.slice(0, 5))
    problems.push(`expected ${d.expected}, got ${d.got} (${d.replay})`);
  if (f.records !== f.requests) problems.push(`${f.records} NDJSON records for ${f.requests} requests`);
  if (!f.receiverAlive) problems.push('the receiver did not survive');
  if (f.partialFiles > 0) problems.push(`${f.partialFiles} partial files left`);
  return problems;
}
