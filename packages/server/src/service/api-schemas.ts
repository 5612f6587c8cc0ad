/**
 * The JSON Schemas (2020-12) of the service's API, written once: requests are validated
 * against them and `GET /openapi.json` is generated from them.
 */
import { type CallbackEvent, FAMILIES, FAMILY_PARTS, type Family } from 'mediahook/protocol';
import { CALLBACK_STATES, CIRCUIT_STATES, OPERATION_KINDS, OPERATION_STATES } from '../store/index.ts';
import { CLIENT_SCHEMAS } from './client-schemas.ts';

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

const ATTEMPT_SCHEMA = {
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
    request_headers: {
      type: ['object', 'null'],
      additionalProperties: { type: 'string' },
      description: 'The headers sent (up to 4 KiB of them); null when nothing was sent.',
    },
    response_headers: {
      type: ['object', 'null'],
      additionalProperties: { type: 'string' },
      description: 'The receiver’s answer’s headers (up to 4 KiB of them); null without an answer.',
    },
  },
} as const;

export const OPERATION_SCHEMA = {
  type: 'object',
  required: [
    'id_gen',
    'client',
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
    client: {
      type: 'string',
      description: 'The client whose key created it: its secret signs the callback.',
    },
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
        status: {
          type: ['string', 'null'],
          description: 'The `status` part the callback carries; null until the operation has finished.',
        },
        next_attempt_at: { type: ['string', 'null'], format: 'date-time' },
        attempts: { type: 'array', items: { $ref: '#/components/schemas/Attempt' } },
      },
    },
  },
} as const;

const OPERATION_LIST_SCHEMA = {
  type: 'object',
  required: ['operations'],
  properties: {
    operations: { type: 'array', items: { $ref: '#/components/schemas/Operation' } },
    next_before: { type: ['string', 'null'], description: 'Cursor for the next page (`before`).' },
  },
} as const;

const ENDPOINT_SCHEMA = {
  type: 'object',
  required: ['key', 'circuit_state', 'consecutive_failures', 'open_until'],
  properties: {
    key: { type: 'string', description: 'host:port of the webhook URLs it covers.' },
    circuit_state: { type: 'string', enum: CIRCUIT_STATES },
    consecutive_failures: { type: 'integer', minimum: 0 },
    open_until: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const RECOVER_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['since'],
  properties: {
    since: {
      type: 'string',
      format: 'date-time',
      description: 'RFC 3339: the dead callbacks that ended at or after it are queued again.',
    },
  },
} as const;

const RECOVERED_SCHEMA = {
  type: 'object',
  required: ['requeued'],
  properties: { requeued: { type: 'integer', minimum: 0, description: 'How many were queued again.' } },
} as const;

const COUNT = { type: 'integer', minimum: 0 } as const;
const NULLABLE_MS = { type: ['integer', 'null'], minimum: 0 } as const;

const ENDPOINT_HEALTH_LIST_SCHEMA = {
  type: 'object',
  required: ['endpoints'],
  properties: {
    endpoints: {
      type: 'array',
      description: 'Every receiver called, worst first.',
      items: {
        type: 'object',
        required: [
          'key',
          'circuit_state',
          'callbacks',
          'last_attempt_at',
          'last_error',
          'success_rate_1h',
          'latency_ms',
        ],
        properties: {
          key: ENDPOINT_SCHEMA.properties.key,
          circuit_state: ENDPOINT_SCHEMA.properties.circuit_state,
          callbacks: {
            type: 'object',
            required: CALLBACK_STATES,
            properties: Object.fromEntries(CALLBACK_STATES.map((state) => [state, COUNT])),
            description: 'Its callbacks by state.',
          },
          last_attempt_at: { type: ['string', 'null'], format: 'date-time' },
          last_error: {
            type: ['string', 'null'],
            description: "The last failed attempt's error, or `HTTP <status>` when the receiver answered.",
          },
          success_rate_1h: {
            type: ['number', 'null'],
            minimum: 0,
            maximum: 1,
            description: "Share of the last hour's attempts answered 2xx; null without attempts.",
          },
          latency_ms: {
            type: ['object', 'null'],
            required: ['p50', 'p95'],
            properties: { p50: COUNT, p95: COUNT },
            description: "The last hour's attempt durations (nearest rank); null without attempts.",
          },
        },
      },
    },
  },
} as const;

const STATS_SCHEMA = {
  type: 'object',
  required: ['buckets'],
  properties: {
    buckets: {
      type: 'array',
      description: 'Oldest first: 60 of 1 min for 1h, 96 of 15 min for 24h; the last holds now.',
      items: {
        type: 'object',
        required: ['start', 'delivered', 'failed', 'p50_ms', 'p95_ms'],
        properties: {
          start: TIME,
          delivered: { ...COUNT, description: 'Attempts answered 2xx.' },
          failed: { ...COUNT, description: 'Every other attempt.' },
          p50_ms: NULLABLE_MS,
          p95_ms: NULLABLE_MS,
        },
      },
    },
  },
} as const;

const ERROR_SCHEMA = {
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

/** `/readyz`'s answer: each check `ok`, or the first line of what failed. */
const READINESS_SCHEMA = {
  type: 'object',
  required: ['ready', 'checks'],
  properties: {
    ready: { type: 'boolean' },
    checks: {
      type: 'object',
      required: ['database', 'blobs'],
      properties: { database: { type: 'string' }, blobs: { type: 'string' } },
    },
  },
} as const;

/** `POST /v1/callbacks`: an outcome made elsewhere, text parts first and the file last. */
const SUBMIT_CALLBACK_SCHEMA = {
  type: 'object',
  required: ['webhook_url', 'family', 'id_gen'],
  properties: {
    webhook_url: { type: 'string', format: 'uri' },
    family: { type: 'string', enum: FAMILIES },
    status: { type: 'string', description: '`success` or `error` when absent.' },
    id_gen: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$' },
    time_gen: { type: 'string', description: 'Sent as it is; the time of hand-in when absent.' },
    result: {
      type: 'string',
      format: 'binary',
      description: 'JPEG, or MP4 in family A (judged by its bytes). Or `message`, not both.',
    },
    message: { type: 'string', description: 'The error text of a failed operation.' },
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

/** The API's schemas by their component name in `/openapi.json`: routes name them. */
export const API_SCHEMAS = {
  CreateOperation: CREATE_OPERATION_SCHEMA,
  Operation: OPERATION_SCHEMA,
  OperationList: OPERATION_LIST_SCHEMA,
  Attempt: ATTEMPT_SCHEMA,
  SubmitCallback: SUBMIT_CALLBACK_SCHEMA,
  Endpoint: ENDPOINT_SCHEMA,
  EndpointHealthList: ENDPOINT_HEALTH_LIST_SCHEMA,
  Recover: RECOVER_SCHEMA,
  Recovered: RECOVERED_SCHEMA,
  Stats: STATS_SCHEMA,
  Readiness: READINESS_SCHEMA,
  Error: ERROR_SCHEMA,
  ...CLIENT_SCHEMAS,
} as const;

export type SchemaName = keyof typeof API_SCHEMAS;
