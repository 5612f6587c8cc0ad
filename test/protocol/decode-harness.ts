/**
 * Runs the decoder over a body split into given chunks and reduces the outcome to plain data,
 * so the same body fed in different ways can be compared with one deep equality.
 */
import { expect } from 'vitest';
import {
  CallbackDecoder,
  type DecodeOptions,
  type Family,
  type FileSink,
  type MediaType,
  ProtocolError,
  type ProtocolErrorCode,
} from '../../src/protocol/index.ts';
import { type FeedingPlan, feedingPlans, sha256Hex } from './bodies.ts';

export interface DecodedFile {
  part: string;
  filename: string;
  declaredType: string | null;
  mediaType: MediaType;
  bytes: number;
  sha256: string | null;
  /**
   * What the sink received, as hex: deep equality of large Buffers is slow in the test
   * runner, of strings it is not.
   */
  content: string;
}

interface DecodedFields {
  family: Family;
  status: string;
  id_gen: string;
  time_gen: string;
}

export type Decoded =
  | (DecodedFields & { event: 'success'; file: DecodedFile })
  | (DecodedFields & { event: 'error'; message: string });

export type Outcome = { ok: true; callback: Decoded } | { ok: false; code: ProtocolErrorCode };

/** What happened to the file sink. */
type SinkState = 'open' | 'closed' | 'aborted';

interface CollectingSink extends FileSink {
  readonly chunks: Buffer[];
  state: SinkState;
}

function collectingSink(slow: boolean): CollectingSink {
  let writes = 0;
  const sink: CollectingSink = {
    chunks: [],
    state: 'open',
    write(chunk) {
      if (sink.state !== 'open') throw new Error(`write after ${sink.state}`);
      // Copied: the decoder may hand over views of the caller's input chunks.
      sink.chunks.push(Buffer.from(chunk));
      writes++;
      if (slow && writes % 3 === 0) return new Promise<void>((resolve) => setImmediate(resolve));
      return undefined;
    },
    async close() {
      if (sink.state !== 'open') throw new Error(`close after ${sink.state}`);
      sink.state = 'closed';
    },
    async abort() {
      if (sink.state !== 'open') throw new Error(`abort after ${sink.state}`);
      sink.state = 'aborted';
    },
  };
  return sink;
}

export type HarnessOptions = Omit<DecodeOptions, 'sink'>;

/**
 * Decodes `chunks` with a fresh decoder; a non-protocol error is a test failure and is rethrown.
 * Also checks the sink contract: a valid success callback closes its sink, a failed decode
 * aborts the sink if one was made, and nothing is written after either.
 */
export async function decodeChunks(
  contentType: string | null | undefined,
  chunks: Iterable<Uint8Array>,
  options: HarnessOptions = {},
  slowSink = false,
): Promise<Outcome> {
  let sink: CollectingSink | null = null;
  let decoder: CallbackDecoder | undefined;
  try {
    decoder = new CallbackDecoder(contentType, {
      ...options,
      sink: () => {
        if (sink) throw new Error('the decoder asked for a second sink');
        sink = collectingSink(slowSink);
        return sink;
      },
    });
    for (const chunk of chunks) {
      const pending = decoder.write(chunk);
      if (pending) await pending;
    }
    const callback = await decoder.end();
    const fields = {
      family: callback.family,
      status: callback.status,
      id_gen: callback.id_gen,
      time_gen: callback.time_gen,
    };
    if (callback.event === 'error') {
      expect(sink, 'an error callback has no file sink').toBeNull();
      return { ok: true, callback: { event: 'error', ...fields, message: callback.message } };
    }
    const used = sink as CollectingSink | null;
    expect(used?.state, 'the sink of a valid callback is closed').toBe('closed');
    expect(callback.file.sink, 'the callback carries the sink it wrote to').toBe(used);
    const { sink: _ignored, ...file } = callback.file;
    return {
      ok: true,
      callback: {
        event: 'success',
        ...fields,
        file: { ...file, content: Buffer.concat(used!.chunks).toString('hex') },
      },
    };
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    await decoder?.abort(error);
    const used = sink as CollectingSink | null;
    if (used) expect(used.state, 'the sink of a failed decode is aborted').toBe('aborted');
    return { ok: false, code: error.code };
  }
}

/** Decodes a body fed whole; the result of the first plan. */
export function decodeWhole(
  contentType: string | null | undefined,
  body: Buffer,
  options: HarnessOptions = {},
): Promise<Outcome> {
  return decodeChunks(contentType, [body], options);
}

/**
 * Feeds `body` in every plan of {@link feedingPlans} and checks all outcomes are equal to the
 * outcome of the whole body; returns that outcome.
 */
export async function decodeEveryWay(
  contentType: string | null | undefined,
  body: Buffer,
  options: HarnessOptions = {},
  plans: FeedingPlan[] = feedingPlans(body),
): Promise<Outcome> {
  const [first, ...rest] = plans;
  const reference = await decodeChunks(contentType, first!.chunks, options, first!.slowSink);
  for (const plan of rest) {
    const outcome = await decodeChunks(contentType, plan.chunks, options, plan.slowSink);
    expect(outcome, `fed ${plan.label}`).toEqual(reference);
  }
  return reference;
}

/** The decoded form a valid success callback must have, with the sha256 computed here. */
export function expectedFile(
  part: string,
  content: Buffer,
  mediaType: MediaType,
  declaredType: string | null,
  filename: string,
): DecodedFile {
  return {
    part,
    filename,
    declaredType,
    mediaType,
    bytes: content.length,
    sha256: sha256Hex(content),
    content: content.toString('hex'),
  };
}
