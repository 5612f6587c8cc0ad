/**
 * Bodies built to exhaust a parser: floods before the first boundary, huge header blocks,
 * thousands of parts, walls of near-delimiters. Each must be decided correctly and quickly,
 * and a rejection must come without reading the rest of the body.
 */
import { describe, expect, it } from 'vitest';
import { CallbackDecoder, ProtocolError } from '../../src/protocol/index.ts';
import {
  byteByByte,
  contentTypeOf,
  errorParts,
  type FeedingPlan,
  jpegBytes,
  nearMisses,
  randomChunks,
  rawBody,
  successParts,
  textPart,
} from './bodies.ts';
import { decodeEveryWay, expectedFile } from './decode-harness.ts';

const B = 'adversarial-boundary';
const CT = contentTypeOf(B);

/** Plans for big bodies: whole and random chunks; byte by byte is left to a smaller copy. */
function bigPlans(body: Buffer): FeedingPlan[] {
  return [
    { label: 'whole', chunks: [body], slowSink: false },
    { label: 'random chunks ≤64 KiB', chunks: randomChunks(body, 7, 64 * 1024), slowSink: false },
    { label: 'random chunks ≤1000', chunks: randomChunks(body, 8, 1000), slowSink: true },
  ];
}

function allPlans(body: Buffer): FeedingPlan[] {
  return [...bigPlans(body), { label: 'byte by byte', chunks: byteByByte(body), slowSink: false }];
}

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await work();
  return { result, ms: performance.now() - started };
}

describe('a flood of CR/LF before the first boundary', () => {
  const valid = rawBody(B, successParts('A', jpegBytes(2000, 5, B)));
  const flood = (bytes: number) => Buffer.alloc(bytes, '\r\n');

  it('4 MiB of CRLF, then a valid callback: decodes, whole and chunked, quickly', async () => {
    const body = Buffer.concat([flood(4 * 1024 * 1024), Buffer.from('\r\n'), valid]);
    const { result, ms } = await timed(() => decodeEveryWay(CT, body, {}, bigPlans(body)));
    expect(result).toMatchObject({ ok: true, callback: { event: 'success', family: 'A' } });
    expect(ms).toBeLessThan(5000);
  });

  it('256 KiB of CRLF, then a valid callback: decodes byte by byte too', async () => {
    const body = Buffer.concat([flood(256 * 1024), Buffer.from('\r\n'), valid]);
    const result = await decodeEveryWay(CT, body, {}, allPlans(body));
    if (!result.ok || result.callback.event !== 'success') throw new Error('expected a success callback');
    expect(result.callback.file).toEqual(
      expectedFile('result_pv', jpegBytes(2000, 5, B), 'image/jpeg', 'image/jpeg', 'result.jpg'),
    );
  });

  it('4 MiB of CRLF and nothing else: malformed_multipart', async () => {
    const body = flood(4 * 1024 * 1024);
    const { result, ms } = await timed(() => decodeEveryWay(CT, body, {}, bigPlans(body)));
    expect(result).toEqual({ ok: false, code: 'malformed_multipart' });
    expect(ms).toBeLessThan(5000);
  });

  it('4 MiB of CRLF, then a callback that lacks a part: missing_part', async () => {
    const body = Buffer.concat([
      flood(4 * 1024 * 1024),
      Buffer.from('\r\n'),
      rawBody(B, errorParts('A', 'm').slice(1)),
    ]);
    expect(await decodeEveryWay(CT, body, {}, bigPlans(body))).toEqual({ ok: false, code: 'missing_part' });
  });
});

describe('walls of near-delimiters', () => {
  it('a 2 MiB file made only of delimiter prefixes decodes byte for byte, quickly', async () => {
    const wall = Buffer.concat(Array.from({ length: 300_000 }, (_, i) => nearMisses(B)[i % 5]!));
    const file = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), wall]);
    const body = rawBody(B, successParts('B', file));
    const { result, ms } = await timed(() => decodeEveryWay(CT, body, {}, bigPlans(body)));
    expect(result).toEqual({
      ok: true,
      callback: expect.objectContaining({
        file: expectedFile('res_image', file, 'image/jpeg', 'image/jpeg', 'result.jpg'),
      }),
    });
    expect(ms).toBeLessThan(5000);
  });
});

describe('oversized header blocks', () => {
  const headerCase = (headers: string[]) =>
    rawBody(B, [...errorParts('A', 'm').slice(0, 3), { headers, body: 'm' }]);

  it('a 64 KiB header line: headers_too_large, every way', async () => {
    const body = headerCase([`Content-Disposition: form-data; name="message"; x="${'a'.repeat(64 * 1024)}"`]);
    expect(await decodeEveryWay(CT, body, {}, allPlans(body))).toEqual({
      ok: false,
      code: 'headers_too_large',
    });
  });

  it('many short header lines over 16 KiB: headers_too_large', async () => {
    const lines = Array.from({ length: 1200 }, (_, i) => `X-Filler-${i}: ${'f'.repeat(8)}`);
    const body = headerCase(['Content-Disposition: form-data; name="message"', ...lines]);
    expect(await decodeEveryWay(CT, body, {}, allPlans(body))).toEqual({
      ok: false,
      code: 'headers_too_large',
    });
  });

  it('a header block of exactly a configured limit passes, one byte more fails', async () => {
    // The limit counts the header lines, each with its CRLF (RFC 5322 §2.2), not the blank line.
    const disposition = 'Content-Disposition: form-data; name="message"';
    const pad = (bytes: number) =>
      `X-Pad: ${'p'.repeat(bytes - (disposition.length + 2) - 'X-Pad: '.length - 2)}`;
    const exact = headerCase([disposition, pad(100)]);
    const over = headerCase([disposition, pad(101)]);
    const limits = { headerBytes: 100 };
    expect(await decodeEveryWay(CT, exact, { limits }, allPlans(exact))).toMatchObject({ ok: true });
    expect(await decodeEveryWay(CT, over, { limits }, allPlans(over))).toEqual({
      ok: false,
      code: 'headers_too_large',
    });
  });
});

describe('10,000 parts', () => {
  const manyParts = (name: (i: number) => string) =>
    rawBody(B, [
      ...errorParts('A', 'm'),
      ...Array.from({ length: 10_000 }, (_, i) => textPart(name(i), 'x')),
    ]);

  /** Feeds 4 KiB chunks and reports the code and how much of the body was read before it. */
  async function rejectionPoint(body: Buffer): Promise<{ code: string; read: number }> {
    const decoder = new CallbackDecoder(CT);
    let read = 0;
    try {
      for (const chunk of randomChunks(body, 3, 4096)) {
        read += chunk.length;
        await decoder.write(chunk);
      }
      await decoder.end();
    } catch (error) {
      if (error instanceof ProtocolError) return { code: error.code, read };
      throw error;
    }
    throw new Error('the body was accepted');
  }

  it.each([
    { kind: 'repeating a known name', name: () => 'status', code: 'duplicate_part' },
    { kind: 'with unknown names', name: (i: number) => `field${i}`, code: 'unexpected_part' },
    { kind: 'with empty names', name: () => '', code: 'unexpected_part' },
  ])('$kind: $code, before reading past the fifth part', async ({ name, code }) => {
    const body = manyParts(name);
    const { result, ms } = await timed(() => rejectionPoint(body));
    expect(result.code).toBe(code);
    expect(result.read).toBeLessThan(rawBody(B, errorParts('A', 'm')).length + 8192);
    expect(ms).toBeLessThan(1000);
    expect(await decodeEveryWay(CT, body, {}, allPlans(body))).toEqual({ ok: false, code });
  });
});
