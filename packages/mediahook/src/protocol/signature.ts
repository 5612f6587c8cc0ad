import { createHmac, type Hmac, timingSafeEqual } from 'node:crypto';
import { ProtocolError } from './errors.ts';

/** Header names of Standard Webhooks signatures. */
export const SIGNATURE_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

/** How far a signature's timestamp may be from now, in seconds (Standard Webhooks: 5 minutes). */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

const SECRET_PREFIX = 'whsec_';

/** The HMAC key of a `whsec_…` secret (the base64 after the prefix). */
export function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new TypeError('a signing secret starts with whsec_');
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded))
    throw new TypeError('a signing secret is whsec_ followed by base64');
  const key = Buffer.from(encoded, 'base64');
  if (key.length < 16) throw new TypeError('a signing secret needs at least 16 bytes of key');
  return key;
}

function hmacFor(key: Buffer, id: string, timestamp: number): Hmac {
  const hmac = createHmac('sha256', key);
  hmac.update(`${id}.${timestamp}.`, 'utf8');
  return hmac;
}

/**
 * Signs a body as it streams. Feed it the exact bytes sent; `headers()` gives the three
 * Standard Webhooks headers, with one `v1,` signature per secret (for rotation).
 *
 * @example
 * const signer = new BodySigner(['whsec_…'], callback.id_gen);
 * for await (const chunk of encoded.body()) signer.update(chunk);
 * const headers = signer.headers();
 */
export class BodySigner {
  readonly #id: string;
  readonly #timestamp: number;
  readonly #hmacs: Hmac[];

  constructor(secrets: string | readonly string[], id: string, timestamp = Math.floor(Date.now() / 1000)) {
    const list = typeof secrets === 'string' ? [secrets] : secrets;
    if (list.length === 0) throw new TypeError('at least one signing secret is needed');
    if (/[\r\n\0]/.test(id)) throw new TypeError('a webhook id cannot contain CR, LF or NUL');
    // A header value loses white space at its ends (RFC 9110 §5.5): the receiver would check
    // the signature over another id than the one signed.
    if (/^[ \t]|[ \t]$/.test(id)) throw new TypeError('a webhook id cannot start or end with white space');
    this.#id = id;
    this.#timestamp = timestamp;
    this.#hmacs = list.map((secret) => hmacFor(secretKey(secret), id, timestamp));
  }

  update(chunk: Uint8Array): void {
    for (const hmac of this.#hmacs) hmac.update(chunk);
  }

  headers(): Record<(typeof SIGNATURE_HEADERS)[keyof typeof SIGNATURE_HEADERS], string> {
    return {
      'webhook-id': this.#id,
      'webhook-timestamp': String(this.#timestamp),
      'webhook-signature': this.#hmacs.map((hmac) => `v1,${hmac.digest('base64')}`).join(' '),
    };
  }
}

/** Signs a whole body (a Buffer, a string or a stream of bytes) and returns the headers. */
export async function signBody(
  secrets: string | readonly string[],
  id: string,
  body: Uint8Array | string | AsyncIterable<Uint8Array>,
  timestamp?: number,
): Promise<ReturnType<BodySigner['headers']>> {
  const signer = new BodySigner(secrets, id, timestamp);
  if (typeof body === 'string') signer.update(Buffer.from(body, 'utf8'));
  else if (body instanceof Uint8Array) signer.update(body);
  else for await (const chunk of body) signer.update(chunk);
  return signer.headers();
}

export interface VerifyOptions {
  /** Allowed distance from now, in seconds; 300 by default. */
  toleranceSeconds?: number | undefined;
  /** The current time in milliseconds (for tests). */
  now?: number | undefined;
}

type HeaderLookup = (name: string) => string | null | undefined;

function badSignature(message: string): ProtocolError {
  return new ProtocolError('bad_signature', message);
}

/**
 * Verifies a Standard Webhooks signature over the exact bytes of a body, as they stream.
 * The constructor checks the headers and the timestamp (so a stale request fails before its
 * body is read); `update()` takes the bytes; `verify()` throws unless one of the signatures
 * matches one of the secrets. Comparison is constant-time; bytes are never turned into text.
 *
 * @example
 * const verifier = new SignatureVerifier(['whsec_…'], (name) => req.headers[name] as string);
 * for await (const chunk of req) verifier.update(chunk);
 * verifier.verify();
 */
export class SignatureVerifier {
  readonly id: string;
  readonly timestamp: number;
  readonly #hmacs: Hmac[];
  readonly #signatures: Buffer[];

  constructor(secrets: string | readonly string[], header: HeaderLookup, options: VerifyOptions = {}) {
    const list = typeof secrets === 'string' ? [secrets] : secrets;
    const id = header(SIGNATURE_HEADERS.id);
    const stamp = header(SIGNATURE_HEADERS.timestamp);
    const signature = header(SIGNATURE_HEADERS.signature);
    if (!id || !stamp || !signature) {
      throw badSignature(
        'the request is not signed: webhook-id, webhook-timestamp and webhook-signature are required',
      );
    }
    if (!/^\d{1,15}$/.test(stamp)) throw badSignature('the webhook-timestamp is not a number of seconds');
    const timestamp = Number(stamp);
    const now = Math.floor((options.now ?? Date.now()) / 1000);
    const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
    if (Math.abs(now - timestamp) > tolerance) {
      throw badSignature(
        `the webhook-timestamp is ${now - timestamp} s from now; at most ${tolerance} s is accepted`,
      );
    }
    this.#signatures = signature
      .split(' ')
      .filter((entry) => entry.startsWith('v1,'))
      .map((entry) => Buffer.from(entry.slice(3), 'base64'))
      .filter((bytes) => bytes.length === 32);
    if (this.#signatures.length === 0) throw badSignature('the webhook-signature has no v1 signature');
    this.id = id;
    this.timestamp = timestamp;
    this.#hmacs = list.map((secret) => hmacFor(secretKey(secret), id, timestamp));
  }

  update(chunk: Uint8Array): void {
    for (const hmac of this.#hmacs) hmac.update(chunk);
  }

  verify(): void {
    let matched = false;
    for (const hmac of this.#hmacs) {
      const expected = hmac.digest();
      // Every pair is compared, so the time taken says nothing about which one matched.
      for (const given of this.#signatures) if (timingSafeEqual(expected, given)) matched = true;
    }
    if (!matched) throw badSignature('no signature matches the body');
  }
}
