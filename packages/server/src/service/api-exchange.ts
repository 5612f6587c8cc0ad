/**
 * How the API reads a request and writes an answer: JSON bodies, path segments and query
 * parameters, each refused with an ApiError whose code is stable.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendRevalidated } from 'mediahook/internal';
import { ApiError } from './api-error.ts';
import { MAX_JSON_BYTES } from './request-validation.ts';

const UTF8 = new TextDecoder('utf-8', { fatal: true });
export const JSON_TYPE = 'application/json; charset=utf-8';

export async function readJson(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new ApiError(415, 'unsupported_media_type', 'send the request body as application/json');
  }
  const coding = req.headers['content-encoding'];
  // RFC 9110 §8.4.1: a content coding the server does not decode is answered 415, not read as JSON.
  if (coding !== undefined && coding.trim().toLowerCase() !== 'identity') {
    throw new ApiError(
      415,
      'unsupported_media_type',
      `the body is sent with Content-Encoding ${coding.slice(0, 100)}: send it unencoded`,
    );
  }
  // A declared length over the limit is refused before a byte is read (and, with `Expect:
  // 100-continue`, before the client sends one: see createApiServer).
  if (Number(req.headers['content-length']) > MAX_JSON_BYTES) {
    throw new ApiError(413, 'body_too_large', `the body is over ${MAX_JSON_BYTES} bytes`, {
      connection: 'close',
    });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_JSON_BYTES)
      throw new ApiError(413, 'body_too_large', `the body is over ${MAX_JSON_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  let text: string;
  try {
    // RFC 8259 §8.1: JSON between systems is UTF-8; bytes that are not are refused, not replaced.
    text = UTF8.decode(Buffer.concat(chunks));
  } catch {
    throw new ApiError(400, 'invalid_json', 'the body is not UTF-8 text');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'invalid_json', 'the body is not valid JSON');
  }
}

export function send(
  res: ServerResponse,
  status: number,
  type: string,
  text: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  // Node leaves the body out of an answer to HEAD and keeps its Content-Length (RFC 9110 §9.3.2).
  res.writeHead(status, {
    ...headers,
    'content-type': type,
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, JSON_TYPE, JSON.stringify(body));
}

/** A resource the dashboard polls: 304 to a client that holds it already (sendRevalidated). */
export function sendData(res: ServerResponse, body: unknown): void {
  sendRevalidated(res.req, res, JSON.stringify(body), { 'content-type': JSON_TYPE });
}

/** A path segment, percent-decoded; one that cannot be decoded names no resource. */
export function segment(raw: string, path: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    throw new ApiError(404, 'not_found', `no such resource: ${path}`);
  }
  // No id or key holds U+0000 (the store refuses it): such a segment names nothing either.
  if (decoded.includes('\u0000')) throw new ApiError(404, 'not_found', `no such resource: ${path}`);
  return decoded;
}

/** A query parameter's one value: given twice, which one was meant is anyone's guess. */
export function queryParam(url: URL, name: string): string | null {
  const values = url.searchParams.getAll(name);
  if (values.length > 1) throw new ApiError(400, 'invalid_request', `${name} is given more than once`);
  return values[0] ?? null;
}

/** A free-text query parameter; U+0000 is refused here rather than by the store. */
export function textParam(url: URL, name: string): string | undefined {
  const value = queryParam(url, name);
  if (value === null) return undefined;
  if (value.includes('\u0000'))
    throw new ApiError(400, 'invalid_request', `${name} contains a NUL character`);
  return value;
}

export function oneOf<T extends string>(
  name: string,
  value: string | null,
  allowed: readonly T[],
): T | undefined {
  if (value === null) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ApiError(400, 'invalid_request', `${name} takes one of ${allowed.join(', ')}`);
  }
  return value as T;
}
