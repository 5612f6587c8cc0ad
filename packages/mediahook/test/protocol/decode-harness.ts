/**
 * Runs the decoder over a body split into given chunks and reduces the outcome to plain data,
 * so the same body fed in different ways can be compared with one deep equality.
 */
import { expect } from 'vitest';
import { decode } from '../../../../test/support/fuzz/oracle.ts';
import type { DecodeOptions, Family, MediaType, ProtocolErrorCode } from '../../src/protocol/index.ts';
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

type Outcome = { ok: true; callback: Decoded } | { ok: false; code: ProtocolErrorCode };

export type HarnessOptions = Omit<DecodeOptions, 'sink'>;

/** A body every decoder must accept, and what it must decode to. */
export interface ValidCase {
  name: string;
  contentType?: string;
  body: Buffer;
  expected: Decoded;
  options?: HarnessOptions;
  /** Why busboy reads this body differently, when it does; such cases skip the comparison. */
  busboyDiffers?: string;
  /** Why werkzeug (Flask's parser) reads this body differently, when it does. */
  werkzeugDiffers?: string;
}

/**
 * Decodes `chunks` with a fresh decoder, through the fuzzers' oracle: a non-protocol error or a
 * broken sink contract (see {@link decode}) is a test failure and is thrown.
 */
export async function decodeChunks(
  contentType: string | null | undefined,
  chunks: Iterable<Uint8Array>,
  options: HarnessOptions = {},
  slowSink = false,
): Promise<Outcome> {
  const outcome = await decode(contentType, chunks, slowSink, options);
  if (!outcome.ok) return outcome;
  const { event, family, status, id_gen, time_gen, message, file } = outcome.callback;
  const fields = { family, status, id_gen, time_gen };
  if (event === 'error') return { ok: true, callback: { event, ...fields, message: message! } };
  const { content, ...rest } = file!;
  return {
    ok: true,
    callback: { event: 'success', ...fields, file: { ...rest, content: content.toString('hex') } },
  };
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
  // Told the body's length, as a receiver tells it from Content-Length, the decoder hashes
  // differently (in place as it goes, or on the thread from the start), to the same outcome.
  for (const plan of [first!, rest.at(-1)].filter((p) => p !== undefined)) {
    const told = await decodeChunks(
      contentType,
      plan.chunks,
      { bodyBytes: body.length, ...options },
      plan.slowSink,
    );
    expect(told, `fed ${plan.label}, its length told`).toEqual(reference);
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
