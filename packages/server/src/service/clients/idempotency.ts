/**
 * `Idempotency-Key` on a creating request: the first request with a key is processed and its
 * answer kept for a day (5xx excepted); a repeat with the same body (the same JSON value) gets
 * that answer again, one with another body `422`, one while the first is still processed `409`.
 * Which request is first is the database's uniqueness, so it holds across processes.
 */
import { createHash } from 'node:crypto';
import type { IdempotencyStore } from '../../store/index.ts';
import { ApiError, apiErrorResponse } from '../api-error.ts';

/** An answer to send: status and JSON body. */
export interface JsonAnswer {
  status: number;
  body: unknown;
  /** Set on an answer replayed from a key's first request. */
  headers?: Record<string, string>;
}

const KEEP_MS = 24 * 3_600_000;
const ABANDON_MS = 60_000;
const KEY = /^[\x20-\x7e]{1,255}$/;

/** The request's `Idempotency-Key`, checked; undefined without one. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !KEY.test(header)) {
    throw new ApiError(400, 'invalid_request', 'Idempotency-Key takes 1 to 255 printable ASCII characters');
  }
  return header;
}

/** A JSON value with its object keys sorted, so that one value has one text whatever its spelling. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  return Object.fromEntries(entries.map(([k, v]) => [k, canonical(v)]));
}

/**
 * Answers `request` through its idempotency key: `create` runs only for the request that takes
 * the key; errors it throws become their answers (and are kept, unless 5xx).
 *
 * @example
 * const answer = await idempotentAnswer(store, caller.client, key, body, () => create(body));
 */
export async function idempotentAnswer(
  store: IdempotencyStore,
  client: string,
  key: string,
  request: unknown,
  create: () => Promise<JsonAnswer>,
): Promise<JsonAnswer> {
  const sha256 = createHash('sha256')
    .update(JSON.stringify(canonical(request)))
    .digest('hex');
  const claim = await store.claimIdempotencyKey(client, key, sha256, {
    keepMs: KEEP_MS,
    abandonMs: ABANDON_MS,
  });
  if (claim.state === 'reused') {
    throw new ApiError(
      422,
      'idempotency_key_reused',
      'this Idempotency-Key was used with another request body',
    );
  }
  if (claim.state === 'in_progress') {
    throw new ApiError(
      409,
      'idempotency_key_in_use',
      'the first request with this Idempotency-Key is still being processed',
    );
  }
  if (claim.state === 'done') {
    return { status: claim.status, body: JSON.parse(claim.body), headers: { 'idempotent-replayed': 'true' } };
  }
  let answer: JsonAnswer;
  try {
    answer = await create();
  } catch (error) {
    const { status, body } = apiErrorResponse(error);
    if (status >= 500) {
      await store.releaseIdempotencyKey(client, key);
      throw error;
    }
    answer = { status, body };
  }
  await store.completeIdempotencyKey(client, key, answer.status, JSON.stringify(answer.body));
  return answer;
}
