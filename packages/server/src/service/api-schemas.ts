/**
 * The JSON Schemas (2020-12) of the service's API, written once: requests are validated
 * against them and `GET /openapi.json` is generated from them.
 */
import { type CallbackEvent, FAMILIES, FAMILY_PARTS, type Family } from 'mediahook/protocol';
import { CALLBACK_STATES, CIRCUIT_STATES, OPERATION_KINDS, OPERATION_STATES } from '../store/index.ts';

export const CREATE_OPERATION_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'family', 'webhook_url', 'prompt'],
  properties: {
    kind: { type: 'string', enum: OPERATION_KINDS, description: 'What to generate.' },
    family: {
      type: 'string',
      enum: FAMILIES,
      description: `Callback family: ${FAMILIES.map(
        (family) =>
          `${family} (\`${FAMILY_PARTS[family].result}\` / \`${FAMILY_PARTS[family].error}\`: ` +
          `${FAMILY_PARTS[family].mediaTypes.join(', ')})`,
      ).join(' or ')}.`,
    },
    webhook_url: {
      type: 'string',
      format: 'iri',
      maxLength: 2048,
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
      description: 'Where the callback is POSTed.',
    },
    prompt: { type: 'string', minLength: 1, maxLength: 4000, description: 'What the result should show.' },
    fail_with: {
      type: 'string',
      minLength: 1,
      maxLength: 4000,
      description: 'Makes the generator fail with this text, to exercise error callbacks.',
    },
    status: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      description: 'Overrides the `status` part of the callback (`success` / `error` by default).',
    },
  },
} as const;

const TIME = { type: 'string', format: 'date-time' } as const;

export const ATTEMPT_SCHEMA = {
  type: 'object',
  required: ['at', 'duration_ms', 'status_code', 'error'],
  properties: {
    at: TIME,
    duration_ms: { type: 'integer', minimum: 0 },
    status_code: { type: ['integer', 'null'] },
    error: { type: ['string', 'null'] },
    response_head: {
      type: ['string', 'null'],
      description: 'The first bytes (up to 1 KiB) of the receiver’s answer, as text; null without one.',
    },
  },
} as const;

export const OPERATION_SCHEMA = {
  type: 'object',
  required: [
    'id_gen',
    'kind',
    'family',
    'state',
    'webhook_url',
    'created_at',
    'finished_at',
    'error_message',
    'callback',
  ],
  properties: {
    id_gen: { type: 'string', description: 'UUIDv7; the idempotency key of the callback.' },
    kind: {
      type: 'string',
      enum: [...OPERATION_KINDS, 'external'],
      description: '`external`: an outcome handed in through `POST /v1/callbacks`.',
    },
    family: { type: 'string', enum: FAMILIES },
    state: { type: 'string', enum: OPERATION_STATES },
    webhook_url: { type: 'string' },
    created_at: TIME,
    finished_at: { type: ['string', 'null'], format: 'date-time' },
    error_message: {
      type: ['string', 'null'],
      description: 'Why a failed operation failed: the text its error callback carries; null otherwise.',
    },
    callback: {
      type: 'object',
      required: ['state', 'next_attempt_at', 'attempts'],
      properties: {
        state: { type: 'string', enum: CALLBACK_STATES },
        next_attempt_at: { type: ['string', 'null'], format: 'date-time' },
        attempts: { type: 'array', items: { $ref: '#/components/schemas/Attempt' } },
      },
    },
  },
} as const;

export const OPERATION_LIST_SCHEMA = {
  type: 'object',
  required: ['operations'],
  properties: {
    operations: { type: 'array', items: { $ref: '#/components/schemas/Operation' } },
    next_before: { type: ['string', 'null'], description: 'Cursor for the next page (`before`).' },
  },
} as const;

export const ENDPOINT_SCHEMA = {
  type: 'object',
  required: ['key', 'circuit_state', 'consecutive_failures', 'open_until'],
  properties: {
    key: { type: 'string', description: 'host:port of the webhook URLs it covers.' },
    circuit_state: { type: 'string', enum: CIRCUIT_STATES },
    consecutive_failures: { type: 'integer', minimum: 0 },
    open_until: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
  },
} as const;

/** Text parts common to every callback. */
const CALLBACK_TEXT = {
  status: { type: 'string', description: 'Opaque status text (`success` / `error` by default).' },
  id_gen: { type: 'string', description: 'Identifier of the operation: deduplicate by it.' },
  time_gen: { type: 'string', description: 'RFC 3339 UTC time with milliseconds.' },
} as const;

function callbackSchema(extra: Record<string, unknown>, required: string) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['status', 'id_gen', 'time_gen', required],
    properties: { ...CALLBACK_TEXT, ...extra },
  };
}

/**
 * A file part, as OpenAPI 3.1 describes a binary multipart part: no schema of its own (a
 * `contentMediaType` would be ignored beside the Encoding Object's `contentType`, and without
 * `contentEncoding` would read as text), so the `encoding` alone names its media types.
 */
function filePart(description: string): { description: string } {
  return { description };
}

/** The component name of one callback's schema: `CallbackASuccess`, `CallbackBError`… */
export function callbackSchemaName(family: Family, event: CallbackEvent): string {
  return `Callback${family}${event === 'success' ? 'Success' : 'Error'}`;
}

/** Every family's two callbacks as multipart/form-data bodies (OpenAPI `webhooks`). */
export const CALLBACK_SCHEMAS: Readonly<Record<string, ReturnType<typeof callbackSchema>>> =
  Object.fromEntries(
    FAMILIES.flatMap((family) => {
      const { result, error, mediaTypes } = FAMILY_PARTS[family];
      return [
        [
          callbackSchemaName(family, 'success'),
          callbackSchema({ [result]: filePart(`The result: ${mediaTypes.join(' or ')}.`) }, result),
        ],
        [
          callbackSchemaName(family, 'error'),
          callbackSchema({ [error]: { type: 'string', description: 'What went wrong.' } }, error),
        ],
      ];
    }),
  );
