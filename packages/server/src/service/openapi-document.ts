import { FAMILIES, FAMILY_PARTS, version } from 'mediahook/protocol';
import { STATS_WINDOWS } from '../store/index.ts';
import {
  ATTEMPT_SCHEMA,
  CALLBACK_SCHEMAS,
  callbackSchemaName,
  CREATE_OPERATION_SCHEMA,
  ENDPOINT_HEALTH_LIST_SCHEMA,
  ENDPOINT_SCHEMA,
  ERROR_SCHEMA,
  OPERATION_LIST_SCHEMA,
  OPERATION_SCHEMA,
  RECOVER_SCHEMA,
  RECOVERED_SCHEMA,
  STATS_SCHEMA,
} from './api-schemas.ts';

const json = (ref: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } });
const errorResponse = (description: string) => ({ description, content: json('Error') });
/** Every `/v1` operation answers this without a valid key (once a key exists). */
const UNAUTHORIZED = {
  description: 'No valid API key.',
  headers: {
    'WWW-Authenticate': {
      description: '`Bearer realm="mediahook"`, with `error="invalid_token"` when the key given is unknown.',
      schema: { type: 'string' },
    },
  },
  content: json('Error'),
};

/**
 * The request headers of every callback. The signature headers are there only when the service
 * has a secret (Standard Webhooks; protocol.md, Signatures).
 */
/** `/readyz`'s body: each check `ok`, or the text of what failed. */
const READINESS = {
  'application/json': {
    schema: {
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
    },
  },
};

const CALLBACK_HEADERS = [
  {
    name: 'User-Agent',
    in: 'header',
    required: true,
    description: '`mediahook/<version>`.',
    schema: { type: 'string', pattern: '^mediahook/' },
  },
  {
    name: 'webhook-id',
    in: 'header',
    required: false,
    description: 'Present when the service signs: the id_gen of the callback.',
    schema: { type: 'string' },
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: false,
    description: 'Present when the service signs: when it signed, in Unix seconds.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: false,
    description:
      'Present when the service signs: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` over the exact ' +
      'multipart bytes, one per secret, separated by spaces (key rotation).',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$' },
  },
];

function webhook(name: string, summary: string, filePart?: string, mediaTypes?: string) {
  return {
    post: {
      summary,
      description:
        "Sent to the operation's webhook_url. Signed per Standard Webhooks when the service has a secret " +
        '(webhook-id = id_gen, webhook-timestamp, webhook-signature over the exact multipart bytes).',
      parameters: CALLBACK_HEADERS,
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: { $ref: `#/components/schemas/${name}` },
            ...(filePart ? { encoding: { [filePart]: { contentType: mediaTypes } } } : {}),
          },
        },
      },
      responses: {
        '200': { description: 'The receiver accepted the callback (or already had it).' },
        '2XX': { description: 'Any 2xx counts as delivered, as 200 does.' },
        '410': {
          description: 'The receiver refuses the callback for good: the service stops retrying (`gone`).',
        },
        '500': {
          description:
            'The receiver failed to process it; the service retries, as it does on any other status ' +
            '(redirects are not followed), a timeout or a network error.',
          content: json('Error'),
        },
      },
    },
  };
}

/**
 * The OpenAPI 3.1 document of the service: its API and the four callbacks it sends
 * (`webhooks`), built from the same schemas that validate requests.
 */
export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'mediahook generation service',
      version: version(),
      description:
        'Starts image and video generation operations and reports each outcome by a multipart/form-data ' +
        "callback to the operation's webhook_url. Every GET also takes HEAD; a method a path does not " +
        'take is answered 405 with `Allow`.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key from `mediahook keys create`.' },
      },
      schemas: {
        CreateOperation: CREATE_OPERATION_SCHEMA,
        Operation: OPERATION_SCHEMA,
        OperationList: OPERATION_LIST_SCHEMA,
        Attempt: ATTEMPT_SCHEMA,
        Endpoint: ENDPOINT_SCHEMA,
        EndpointHealthList: ENDPOINT_HEALTH_LIST_SCHEMA,
        Recover: RECOVER_SCHEMA,
        Recovered: RECOVERED_SCHEMA,
        Stats: STATS_SCHEMA,
        Error: ERROR_SCHEMA,
        ...CALLBACK_SCHEMAS,
      },
    },
    security: [{ apiKey: [] }],
    paths: {
      '/v1/operations': {
        post: {
          operationId: 'createOperation',
          summary: 'Start an operation',
          requestBody: { required: true, content: json('CreateOperation') },
          responses: {
            '202': { description: 'Queued.', content: json('Operation') },
            '400': errorResponse(
              'The request is invalid (B with video, a webhook URL the sender cannot dial, an unknown field…).',
            ),
            '401': UNAUTHORIZED,
            '413': errorResponse('The body is over 64 KiB (`body_too_large`).'),
            '415': errorResponse('The body is not `application/json` (`unsupported_media_type`).'),
          },
        },
        get: {
          operationId: 'listOperations',
          summary: 'List operations, newest first',
          parameters: [
            { name: 'state', in: 'query', schema: OPERATION_SCHEMA.properties.state },
            { name: 'family', in: 'query', schema: OPERATION_SCHEMA.properties.family },
            {
              name: 'callback_state',
              in: 'query',
              schema: OPERATION_SCHEMA.properties.callback.properties.state,
            },
            {
              name: 'endpoint',
              in: 'query',
              schema: { type: 'string' },
              description: 'host:port of the webhook URL',
            },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500 } },
            { name: 'before', in: 'query', schema: { type: 'string' } },
          ],
          responses: {
            '200': { description: 'A page of operations.', content: json('OperationList') },
            '400': errorResponse('A filter or limit is invalid.'),
            '401': UNAUTHORIZED,
          },
        },
      },
      '/v1/callbacks': {
        post: {
          operationId: 'submitCallback',
          summary: 'Deliver an outcome made elsewhere: a result file or an error message',
          description:
            'Text parts first, the file last; the file is streamed to the blob store as it arrives. ' +
            'The same id_gen handed in again with the same parts and file bytes answers 200 with the ' +
            'existing operation; with anything different, 409.',
          requestBody: {
            required: true,
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  required: ['webhook_url', 'family', 'id_gen'],
                  properties: {
                    webhook_url: { type: 'string', format: 'uri' },
                    family: { type: 'string', enum: ['A', 'B'] },
                    status: { type: 'string', description: '`success` or `error` when absent.' },
                    id_gen: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$' },
                    time_gen: {
                      type: 'string',
                      description: 'Sent as it is; the time of hand-in when absent.',
                    },
                    result: {
                      type: 'string',
                      format: 'binary',
                      description: 'JPEG, or MP4 in family A (judged by its bytes). Or `message`, not both.',
                    },
                    message: { type: 'string', description: 'The error text of a failed operation.' },
                  },
                },
              },
            },
          },
          responses: {
            '200': { description: 'Handed in before with the same content.', content: json('Operation') },
            '202': { description: 'Accepted: its callback is queued.', content: json('Operation') },
            '400': errorResponse(
              'Bad input: `missing_part`, `unexpected_part`, `duplicate_part`, `expected_file`, ' +
                '`expected_text`, `text_too_large`, `invalid_text`, `media_mismatch` (neither JPEG nor MP4, ' +
                'or MP4 in family B), `file_too_large`, `malformed_multipart`, `not_multipart`, `invalid`.',
            ),
            '401': UNAUTHORIZED,
            '409': errorResponse('The id_gen was handed in before with other content (`conflict`).'),
          },
        },
      },
      '/v1/operations/{id_gen}': {
        parameters: [{ name: 'id_gen', in: 'path', required: true, schema: { type: 'string' } }],
        get: {
          operationId: 'getOperation',
          summary: "An operation and its callback's delivery",
          responses: {
            '200': { description: 'The operation.', content: json('Operation') },
            '401': UNAUTHORIZED,
            '404': errorResponse('Unknown.'),
          },
        },
      },
      '/v1/operations/{id_gen}/redeliver': {
        parameters: [{ name: 'id_gen', in: 'path', required: true, schema: { type: 'string' } }],
        post: {
          operationId: 'redeliver',
          summary: 'Queue the callback again, due now, with its whole retry schedule',
          responses: {
            '202': { description: 'Queued again.', content: json('Operation') },
            '401': UNAUTHORIZED,
            '404': errorResponse('Unknown.'),
            '409': errorResponse('The operation has not finished, or its callback is being delivered.'),
          },
        },
      },
      '/v1/operations/{id_gen}/result': {
        parameters: [{ name: 'id_gen', in: 'path', required: true, schema: { type: 'string' } }],
        get: {
          operationId: 'getResult',
          summary: "The operation's result file (the dashboard's preview)",
          responses: {
            '200': {
              description: 'The JPEG or MP4.',
              content: {
                'image/jpeg': { schema: { type: 'string', contentMediaType: 'image/jpeg' } },
                'video/mp4': { schema: { type: 'string', contentMediaType: 'video/mp4' } },
              },
            },
            '401': UNAUTHORIZED,
            '404': errorResponse('Unknown, failed, or its file is no longer kept.'),
          },
        },
      },
      '/v1/endpoints': {
        get: {
          operationId: 'listEndpoints',
          summary: 'Every receiver called, worst first, with its health',
          responses: {
            '200': { description: 'The receivers.', content: json('EndpointHealthList') },
            '401': UNAUTHORIZED,
          },
        },
      },
      '/v1/endpoints/{key}/recover': {
        parameters: [
          { name: 'key', in: 'path', required: true, schema: { type: 'string' }, description: 'host:port' },
        ],
        post: {
          operationId: 'recoverEndpoint',
          summary: "Queue again, as redeliver would, the receiver's dead callbacks that ended since a time",
          requestBody: { required: true, content: json('Recover') },
          responses: {
            '202': { description: 'Queued again (none: 0).', content: json('Recovered') },
            '400': errorResponse(
              '`since` is not an RFC 3339 time with its zone (`invalid_since`), or the body has another ' +
                'shape (`invalid_request`, `invalid_json`).',
            ),
            '401': UNAUTHORIZED,
            '403': errorResponse("Another site's page made the request (`cross_site_request`)."),
            '404': errorResponse('The key is not text (bad percent-encoding, or U+0000).'),
            '413': errorResponse('The body is over 64 KiB (`body_too_large`).'),
            '415': errorResponse('The body is not `application/json` (`unsupported_media_type`).'),
          },
        },
      },
      '/v1/stats': {
        get: {
          operationId: 'getStats',
          summary: 'Attempts over time in equal buckets: 1 min for 1h, 15 min for 24h',
          parameters: [
            {
              name: 'window',
              in: 'query',
              schema: { type: 'string', enum: Object.keys(STATS_WINDOWS), default: '1h' },
            },
          ],
          responses: {
            '200': { description: 'The buckets.', content: json('Stats') },
            '400': errorResponse('An unknown window (`invalid_request`).'),
            '401': UNAUTHORIZED,
          },
        },
      },
      '/v1/endpoints/{key}': {
        parameters: [
          { name: 'key', in: 'path', required: true, schema: { type: 'string' }, description: 'host:port' },
        ],
        get: {
          operationId: 'getEndpoint',
          summary: "A receiver's circuit breaker",
          responses: {
            '200': { description: 'The circuit.', content: json('Endpoint') },
            '401': UNAUTHORIZED,
            '404': errorResponse('The key is not text (bad percent-encoding, or U+0000).'),
          },
        },
      },
      '/healthz': {
        get: {
          summary: 'Liveness',
          security: [],
          responses: {
            '200': {
              description: 'Alive.',
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    required: ['ok'],
                    properties: { ok: { type: 'boolean', const: true } },
                  },
                },
              },
            },
          },
        },
      },
      '/readyz': {
        get: {
          summary: 'Readiness: the database and the blob store answer (each probed at most every 2 s)',
          security: [],
          responses: {
            '200': { description: 'Ready: every check is ok.', content: READINESS },
            '503': { description: 'Not ready: a failing check holds what failed.', content: READINESS },
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          security: [],
          responses: {
            '200': {
              description: 'The Prometheus text exposition format, version 0.0.4.',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
          },
        },
      },
    },
    webhooks: Object.fromEntries(
      FAMILIES.flatMap((family) => {
        const { result, mediaTypes } = FAMILY_PARTS[family];
        const success = callbackSchemaName(family, 'success');
        const error = callbackSchemaName(family, 'error');
        return [
          [lowerFirst(success), webhook(success, `Family ${family}, success`, result, mediaTypes.join(', '))],
          [lowerFirst(error), webhook(error, `Family ${family}, error`)],
        ];
      }),
    ),
  };
}

function lowerFirst(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}
