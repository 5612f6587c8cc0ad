import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { familiesCarrying, familyMediaProblem } from 'mediahook/protocol';
import type { CreateOperation } from '../client/api-types.ts';
import { checkWebhookUrl, type SsrfPolicy, SsrfRefusedError } from '../delivery/index.ts';
import type { KeyRole } from '../store/index.ts';
import { ApiError } from './api-error.ts';
import { CREATE_OPERATION_SCHEMA, RECOVER_SCHEMA } from './api-schemas.ts';
import { CLIENT_SCHEMAS } from './client-schemas.ts';
import { mediaTypeOf } from './generators/index.ts';

// ajv-formats is CommonJS: its function is the module itself or its `default`, by loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => unknown;

const ajv = new Ajv2020({ allErrors: false, strict: true });
addFormats(ajv);
// A webhook URL may hold any Unicode (an IDN host, a query in any script): it is checked with
// the WHATWG parser the sender dials with (`webhookUrlProblem`), not a pattern of ASCII URIs.
ajv.addFormat('iri', true);

/** Largest JSON body the API reads. */
export const MAX_JSON_BYTES = 64 * 1024;

const validateCreate = ajv.compile(CREATE_OPERATION_SCHEMA);
const validateRecover = ajv.compile(RECOVER_SCHEMA);
const validateSince = ajv.compile(RECOVER_SCHEMA.properties.since);
const validateCreateKey = ajv.compile(CLIENT_SCHEMAS.CreateKey);

/** With the `u` flag a surrogate pair is one code point: only a half of one matches. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

function describe(error: ErrorObject | undefined): string {
  if (!error) return 'the request body is invalid';
  const where = error.instancePath === '' ? 'the body' : error.instancePath.slice(1).replaceAll('/', '.');
  if (error.keyword === 'additionalProperties') {
    return `${where} has an unknown field ${JSON.stringify(error.params['additionalProperty'])}`;
  }
  if (error.keyword === 'required')
    return `${where} lacks the field ${JSON.stringify(error.params['missingProperty'])}`;
  return `${where} ${error.message ?? 'is invalid'}`;
}

/**
 * Why the sender could never dial a webhook URL, if it could not, by the WHATWG parser the sender
 * uses. What the SSRF guard refuses is said by {@link webhookUrlRefusal}.
 */
export function webhookUrlProblem(text: string): string | undefined {
  try {
    // WHATWG also refuses an empty host and a port over 65535 for http(s).
    const url = new URL(text);
    // The WHATWG parser drops tabs and line breaks and trims spaces and controls, so the URL
    // dialled would not be the one stored and shown: such characters must be percent-encoded.
    if (/[\u0000-\u0020\u007f]/.test(text)) return 'has a space or a control character: percent-encode it';
    if (url.port === '0') return 'has port 0, which cannot be dialled';
    return undefined;
  } catch {
    return 'is not a valid absolute URL';
  }
}

/**
 * Why the SSRF guard would refuse a webhook URL from its text alone (a scheme other than http(s),
 * credentials, a literal loopback, private, link-local or metadata address, a localhost name),
 * if it would. A host name is resolved, and its addresses guarded, only at delivery.
 *
 * @example
 * webhookUrlRefusal('http://127.0.0.1:9000/hook', {}); // 'webhook_url 127.0.0.1 is loopback …'
 */
export function webhookUrlRefusal(text: string, policy: SsrfPolicy): string | undefined {
  try {
    checkWebhookUrl(text, policy);
    return undefined;
  } catch (error) {
    if (!(error instanceof SsrfRefusedError)) throw error;
    return `webhook_url is refused: ${error.message} (for local work, serve with --allow-private-urls)`;
  }
}

/**
 * Validates a create-operation body against its schema and the rules a schema cannot say
 * (a webhook URL the sender can dial and the SSRF guard lets through, a family that carries the kind's media type). Throws an {@link ApiError} 400 with a code.
 */
export function parseCreateOperation(body: unknown, policy: SsrfPolicy): CreateOperation {
  if (!validateCreate(body)) {
    throw new ApiError(400, 'invalid_request', describe(validateCreate.errors?.[0]));
  }
  const request = body as CreateOperation;
  for (const field of ['prompt', 'fail_with', 'status', 'webhook_url'] as const) {
    // JSON may carry \u0000, which no store keeps (PostgreSQL's text cannot hold it).
    if (request[field]?.includes('\u0000')) {
      throw new ApiError(400, 'invalid_request', `${field} contains a NUL character (U+0000)`);
    }
    // Nor a lone surrogate escape (\ud800), which has no UTF-8 form: it would be stored and
    // sent as U+FFFD, another text than the one asked for.
    if (request[field] !== undefined && LONE_SURROGATE.test(request[field])) {
      throw new ApiError(
        400,
        'invalid_request',
        `${field} contains a lone surrogate, which is not Unicode text`,
      );
    }
  }
  const problem = webhookUrlProblem(request.webhook_url);
  if (problem) throw new ApiError(400, 'invalid_request', `webhook_url ${problem}`);
  const refusal = webhookUrlRefusal(request.webhook_url, policy);
  if (refusal) throw new ApiError(400, 'webhook_url_not_allowed', refusal);
  const mediaType = mediaTypeOf(request.kind);
  const mismatch = familyMediaProblem(request.family, mediaType);
  if (mismatch !== undefined) {
    // The code names the pair (`family_b_video`), so a client can tell the cases apart.
    const code = `family_${request.family.toLowerCase()}_${request.kind}`;
    const carriers = familiesCarrying(mediaType).join(' or ');
    throw new ApiError(400, code, `${mismatch}: a ${request.kind} needs family ${carriers}`);
  }
  return request;
}

/** RFC 3339 with a zone (`Z` or an offset); ajv's date-time also takes a space for the `T`. */
const RFC_3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * The body of `POST /v1/endpoints/{key}/recover`: `since` as Unix ms. A body of another shape
 * is `400 invalid_request`; a `since` that is not an RFC 3339 time with its zone, `400 invalid_since`.
 */
export function parseRecover(body: unknown): { since: number } {
  const since = (body as { since?: unknown } | null)?.since;
  if (typeof since === 'string' && !(RFC_3339.test(since) && validateSince(since))) {
    throw new ApiError(
      400,
      'invalid_since',
      'since is not an RFC 3339 time with its zone, as 2026-01-01T10:00:00Z',
    );
  }
  if (!validateRecover(body))
    throw new ApiError(400, 'invalid_request', describe(validateRecover.errors?.[0]));
  return { since: Date.parse(since as string) };
}

/** The body of `POST /v1/keys`, checked against its schema: `400 invalid_request` otherwise. */
export function parseCreateKey(body: unknown): { client: string; role?: KeyRole; expires_in?: string } {
  if (!validateCreateKey(body)) {
    throw new ApiError(400, 'invalid_request', describe(validateCreateKey.errors?.[0]));
  }
  return body as { client: string; role?: KeyRole; expires_in?: string };
}
