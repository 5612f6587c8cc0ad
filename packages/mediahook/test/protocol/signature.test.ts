/**
 * Standard Webhooks signatures over the exact bytes of a body: the published test vector,
 * tolerance, rotation, tampering, binary bodies, and streaming.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  BodySigner,
  encodeCallback,
  ProtocolError,
  SignatureVerifier,
  secretKey,
  signBody,
} from '../../src/protocol/index.ts';
import { jpegBytes, randomChunks } from './bodies.ts';
import { decodeChunks } from './decode-harness.ts';

// The test vector published with the Standard Webhooks specification.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const OTHER_SECRET = 'whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldCBrZXkh';
const THIRD_SECRET = 'whsec_YSB0aGlyZCBzZWNyZXQgZm9yIHJvdGF0aW9u';

type Headers = Record<string, string>;

function lookup(headers: Headers) {
  return (name: string) => headers[name];
}

function vectorHeaders(signature = VECTOR.signature): Headers {
  return {
    'webhook-id': VECTOR.id,
    'webhook-timestamp': String(VECTOR.timestamp),
    'webhook-signature': signature,
  };
}

/** Verifies `chunks` and returns the error code, or 'ok'. */
function verify(
  secrets: string | string[],
  headers: Headers,
  chunks: Uint8Array[],
  options: { now?: number; toleranceSeconds?: number } = {},
): string {
  try {
    const verifier = new SignatureVerifier(secrets, lookup(headers), {
      now: VECTOR.timestamp * 1000,
      ...options,
    });
    for (const chunk of chunks) verifier.update(chunk);
    verifier.verify();
    return 'ok';
  } catch (error) {
    if (error instanceof ProtocolError) return error.code;
    throw error;
  }
}

const vectorBody = Buffer.from(VECTOR.body, 'utf8');

describe('the Standard Webhooks test vector', () => {
  it('signs to the published signature', async () => {
    const headers = await signBody(VECTOR.secret, VECTOR.id, VECTOR.body, VECTOR.timestamp);
    expect(headers).toEqual(vectorHeaders());
  });

  it('matches an HMAC computed here from the spec: key = base64 after whsec_, over "id.timestamp.body"', () => {
    const key = Buffer.from(VECTOR.secret.slice('whsec_'.length), 'base64');
    const mac = createHmac('sha256', key)
      .update(`${VECTOR.id}.${VECTOR.timestamp}.${VECTOR.body}`)
      .digest('base64');
    expect(`v1,${mac}`).toBe(VECTOR.signature);
    expect(secretKey(VECTOR.secret).equals(key)).toBe(true);
  });

  it('verifies', () => {
    expect(verify(VECTOR.secret, vectorHeaders(), [vectorBody])).toBe('ok');
  });
});

describe('verification rejects what it must', () => {
  it.each([
    {
      case: 'a signature with one character changed',
      headers: vectorHeaders(VECTOR.signature.replace('g0hM', 'g0hN')),
    },
    { case: 'another id', headers: { ...vectorHeaders(), 'webhook-id': 'msg_other' } },
    {
      case: 'another timestamp',
      headers: { ...vectorHeaders(), 'webhook-timestamp': String(VECTOR.timestamp + 1) },
    },
    {
      case: 'no signature header',
      headers: { 'webhook-id': VECTOR.id, 'webhook-timestamp': String(VECTOR.timestamp) },
    },
    {
      case: 'no id header',
      headers: { 'webhook-timestamp': String(VECTOR.timestamp), 'webhook-signature': VECTOR.signature },
    },
    {
      case: 'a timestamp that is not a number',
      headers: { ...vectorHeaders(), 'webhook-timestamp': '1614265330.0' },
    },
    {
      case: 'only an unknown signature version',
      headers: vectorHeaders(VECTOR.signature.replace('v1,', 'v2,')),
    },
    { case: 'a truncated signature', headers: vectorHeaders(VECTOR.signature.slice(0, 20)) },
  ])('$case', ({ headers }) => {
    expect(verify(VECTOR.secret, headers, [vectorBody])).toBe('bad_signature');
  });

  it('the wrong secret', () => {
    expect(verify(OTHER_SECRET, vectorHeaders(), [vectorBody])).toBe('bad_signature');
  });

  it('a body changed after signing, by one byte or one trailing newline', () => {
    const changed = Buffer.from(vectorBody);
    const at = changed.length - 2;
    changed[at] = changed[at]! ^ 1;
    expect(verify(VECTOR.secret, vectorHeaders(), [changed])).toBe('bad_signature');
    expect(verify(VECTOR.secret, vectorHeaders(), [vectorBody, Buffer.from('\n')])).toBe('bad_signature');
    expect(verify(VECTOR.secret, vectorHeaders(), [vectorBody.subarray(1)])).toBe('bad_signature');
  });
});

describe('timestamp tolerance (±5 minutes)', () => {
  it.each([
    { offset: 0, result: 'ok' },
    { offset: 300, result: 'ok' },
    { offset: -300, result: 'ok' },
    { offset: 301, result: 'bad_signature' },
    { offset: -301, result: 'bad_signature' },
    { offset: 86_400, result: 'bad_signature' },
  ])('now = signed + $offset s → $result', ({ offset, result }) => {
    const now = (VECTOR.timestamp + offset) * 1000;
    expect(verify(VECTOR.secret, vectorHeaders(), [vectorBody], { now })).toBe(result);
  });

  it('a stale request fails before its body is read', () => {
    const headers = lookup(vectorHeaders());
    expect(
      () => new SignatureVerifier(VECTOR.secret, headers, { now: (VECTOR.timestamp + 600) * 1000 }),
    ).toThrow(ProtocolError);
  });

  it('honours a configured tolerance', () => {
    const now = (VECTOR.timestamp + 30) * 1000;
    expect(verify(VECTOR.secret, vectorHeaders(), [vectorBody], { now, toleranceSeconds: 29 })).toBe(
      'bad_signature',
    );
    expect(verify(VECTOR.secret, vectorHeaders(), [vectorBody], { now, toleranceSeconds: 30 })).toBe('ok');
  });
});

describe('secret rotation', () => {
  it('the signer writes one v1 signature per secret, space-separated', async () => {
    const headers = await signBody([VECTOR.secret, OTHER_SECRET], VECTOR.id, VECTOR.body, VECTOR.timestamp);
    const signatures = headers['webhook-signature'].split(' ');
    expect(signatures).toHaveLength(2);
    expect(signatures[0]).toBe(VECTOR.signature);
    expect(signatures[1]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(signatures[1]).not.toBe(VECTOR.signature);
  });

  it.each([
    {
      case: 'old and new secret, signed with the old',
      secrets: [OTHER_SECRET, VECTOR.secret],
      signWith: [VECTOR.secret],
      result: 'ok',
    },
    {
      case: 'one secret, signed with old and new',
      secrets: [VECTOR.secret],
      signWith: [OTHER_SECRET, VECTOR.secret],
      result: 'ok',
    },
    {
      case: 'two secrets, signed with a third',
      secrets: [VECTOR.secret, OTHER_SECRET],
      signWith: [THIRD_SECRET],
      result: 'bad_signature',
    },
  ])('$case → $result', async ({ secrets, signWith, result }) => {
    const headers = await signBody(signWith, VECTOR.id, vectorBody, VECTOR.timestamp);
    expect(verify(secrets, headers, [vectorBody])).toBe(result);
  });

  it('skips signatures of other versions and garbage next to a valid one', () => {
    const header = `v1a,${'A'.repeat(43)}= garbage v2,abc ${VECTOR.signature}`;
    expect(verify(VECTOR.secret, vectorHeaders(header), [vectorBody])).toBe('ok');
  });
});

describe('binary bodies and streaming', () => {
  // Bytes that are not UTF-8: a verifier that turns the body into text replaces them and fails.
  const binary = Buffer.concat([
    Buffer.from([0xff, 0xfe, 0x80, 0xc3, 0x28, 0x00, 0xed, 0xa0, 0x80]),
    jpegBytes(5000, 51),
  ]);

  it('verifies a body that is not valid UTF-8, over its exact bytes', async () => {
    const headers = await signBody(VECTOR.secret, 'msg_binary', binary, VECTOR.timestamp);
    expect(verify(VECTOR.secret, headers, [binary])).toBe('ok');
    const key = secretKey(VECTOR.secret);
    const overBytes = createHmac('sha256', key)
      .update(`msg_binary.${VECTOR.timestamp}.`)
      .update(binary)
      .digest('base64');
    const overText = createHmac('sha256', key)
      .update(`msg_binary.${VECTOR.timestamp}.${binary.toString('utf8')}`)
      .digest('base64');
    expect(headers['webhook-signature']).toBe(`v1,${overBytes}`);
    expect(overText).not.toBe(overBytes);
  });

  it('signing and verifying in chunks equals doing it at once', async () => {
    const oneShot = await signBody(VECTOR.secret, 'msg_stream', binary, VECTOR.timestamp);
    for (const seed of [1, 2, 3]) {
      const chunks = randomChunks(binary, seed, 97 * seed);
      const signer = new BodySigner(VECTOR.secret, 'msg_stream', VECTOR.timestamp);
      for (const chunk of chunks) signer.update(chunk);
      expect(signer.headers()).toEqual(oneShot);
      async function* stream() {
        yield* chunks;
      }
      expect(await signBody(VECTOR.secret, 'msg_stream', stream(), VECTOR.timestamp)).toEqual(oneShot);
      expect(verify(VECTOR.secret, oneShot, chunks)).toBe('ok');
      expect(verify(VECTOR.secret, oneShot, chunks.slice(0, -1))).toBe('bad_signature');
    }
  });

  it('verifies an encoded callback while the same chunks are decoded', async () => {
    const encoded = await encodeCallback({
      family: 'A',
      event: 'success',
      status: 'success',
      id_gen: 'op-1',
      time_gen: '2026-11-22T10:00:00.000Z',
      file: jpegBytes(3000, 52),
      mediaType: 'image/jpeg',
    });
    const chunks: Buffer[] = [];
    for await (const chunk of encoded.body()) chunks.push(...randomChunks(chunk, 9, 500));
    const headers = await signBody([VECTOR.secret], 'op-1', Buffer.concat(chunks), VECTOR.timestamp);
    expect(verify(VECTOR.secret, headers, chunks)).toBe('ok');
    expect(await decodeChunks(encoded.contentType, chunks)).toMatchObject({
      ok: true,
      callback: { id_gen: 'op-1' },
    });
  });
});

describe('secrets and ids', () => {
  it.each([
    { secret: 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', why: 'no whsec_ prefix' },
    { secret: 'whsec_not base64!', why: 'not base64' },
    { secret: 'whsec_c2hvcnQ=', why: 'under 16 bytes of key' },
  ])('refuses a secret with $why', ({ secret }) => {
    expect(() => secretKey(secret)).toThrow(TypeError);
  });

  it('refuses a webhook id with CR or LF (it would split the header)', () => {
    expect(() => new BodySigner(VECTOR.secret, 'a\r\nb')).toThrow(TypeError);
  });

  it.each([' lead', 'trail ', '\ttab', 'nul\0'])(
    'refuses a webhook id a header cannot carry as it is (%j)',
    (id) => {
      expect(() => new BodySigner(VECTOR.secret, id)).toThrow(TypeError);
    },
  );

  it('signs an id with white space inside it', () => {
    expect(new BodySigner(VECTOR.secret, 'in side').headers()['webhook-id']).toBe('in side');
  });
});
