/**
 * The service's HTTP API, one entry per route: the router (router.ts), `/openapi.json`
 * (openapi-document.ts) and the typed client (`@mediahook/server/client`, checked against this
 * table by a test) all follow it. A new route is one entry here and its handler.
 */
import { STATS_WINDOWS } from '../../store/index.ts';
import { OPERATION_SCHEMA } from '../api-schemas.ts';
import { submitCallback } from './callback-routes.ts';
import { createKey, getWebhookSecret, listKeys, revokeKey, rotateWebhookSecret } from './client-routes.ts';
import { createOperation, getOperation, getResult, listOperations, redeliver } from './operation-routes.ts';
import { getEndpoint, getStats, listEndpoints, recoverEndpoint } from './operator-routes.ts';
import type { Route } from './route.ts';
import { dashboard, health, metricsPage, openApi, ready } from './service-pages.ts';

const OVER_64_KIB = 'The body is over 64 KiB (`body_too_large`).';
const NOT_JSON = 'The body is not `application/json` (`unsupported_media_type`).';
const HOST_PORT = 'host:port';
const KEY_NOT_TEXT = 'The key is not text (bad percent-encoding, or U+0000).';
const CLIENT_FILTER = {
  name: 'client',
  schema: { type: 'string' },
  description: "An admin key's view of one client only (a client key always sees its own).",
} as const;

export const ROUTES: readonly Route[] = [
  {
    id: 'createOperation',
    method: 'POST',
    path: '/v1/operations',
    role: 'client',
    client: 'operations.create',
    summary: 'Start an operation',
    description:
      'With an `Idempotency-Key`, a repeat with the same body (the same JSON value) within 24 h ' +
      'answers what the first answered, with `Idempotent-Replayed: true`.',
    headers: [
      {
        name: 'Idempotency-Key',
        description: "1 to 255 printable ASCII characters, the client's own: a retry creates nothing twice.",
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      },
    ],
    body: { type: 'application/json', schema: 'CreateOperation' },
    answers: {
      202: { description: 'Queued (or, replayed, what the first request answered).', schema: 'Operation' },
      400: 'The request is invalid (B with video, a webhook URL the sender cannot dial, an unknown field…).',
      409: 'The first request with this Idempotency-Key is still being processed (`idempotency_key_in_use`).',
      413: OVER_64_KIB,
      415: NOT_JSON,
      422: 'This Idempotency-Key came with another body (`idempotency_key_reused`).',
    },
    handle: createOperation,
  },
  {
    id: 'listOperations',
    method: 'GET',
    path: '/v1/operations',
    role: 'client',
    client: 'operations.list',
    summary: 'List operations, newest first',
    query: [
      { name: 'state', schema: OPERATION_SCHEMA.properties.state },
      { name: 'family', schema: OPERATION_SCHEMA.properties.family },
      { name: 'callback_state', schema: OPERATION_SCHEMA.properties.callback.properties.state },
      { name: 'endpoint', schema: { type: 'string' }, description: 'host:port of the webhook URL' },
      { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 500 } },
      { name: 'before', schema: { type: 'string' } },
      CLIENT_FILTER,
    ],
    answers: {
      200: { description: 'A page of operations.', schema: 'OperationList' },
      400: 'A filter or limit is invalid.',
    },
    handle: listOperations,
  },
  {
    id: 'getOperation',
    method: 'GET',
    path: '/v1/operations/{id_gen}',
    role: 'client',
    client: 'operations.get',
    summary: "An operation and its callback's delivery",
    answers: { 200: { description: 'The operation.', schema: 'Operation' }, 404: 'Unknown.' },
    handle: getOperation,
  },
  {
    id: 'redeliver',
    method: 'POST',
    path: '/v1/operations/{id_gen}/redeliver',
    role: 'client',
    client: 'operations.redeliver',
    summary: 'Queue the callback again, due now, with its whole retry schedule',
    answers: {
      202: { description: 'Queued again.', schema: 'Operation' },
      404: 'Unknown.',
      409: 'The operation has not finished, or its callback is being delivered.',
    },
    handle: redeliver,
  },
  {
    id: 'getResult',
    method: 'GET',
    path: '/v1/operations/{id_gen}/result',
    role: 'client',
    client: 'operations.result',
    summary: "The operation's result file (the dashboard's preview)",
    answers: {
      200: {
        description: 'The JPEG or MP4.',
        content: {
          'image/jpeg': { schema: { type: 'string', contentMediaType: 'image/jpeg' } },
          'video/mp4': { schema: { type: 'string', contentMediaType: 'video/mp4' } },
        },
      },
      404: 'Unknown, failed, or its file is no longer kept.',
    },
    handle: getResult,
  },
  {
    id: 'submitCallback',
    method: 'POST',
    path: '/v1/callbacks',
    role: 'client',
    client: 'callbacks.submit',
    summary: 'Deliver an outcome made elsewhere: a result file or an error message',
    description:
      'Text parts first, the file last; the file is streamed to the blob store as it arrives. ' +
      'The same id_gen handed in again with the same parts and file bytes answers 200 with the ' +
      'existing operation; with anything different, 409.',
    body: { type: 'multipart/form-data', schema: 'SubmitCallback' },
    answers: {
      200: { description: 'Handed in before with the same content.', schema: 'Operation' },
      202: { description: 'Accepted: its callback is queued.', schema: 'Operation' },
      400:
        'Bad input: `missing_part`, `unexpected_part`, `duplicate_part`, `expected_file`, ' +
        '`expected_text`, `text_too_large`, `invalid_text`, `media_mismatch` (neither JPEG nor MP4, ' +
        'or MP4 in family B), `file_too_large`, `malformed_multipart`, `not_multipart`, `invalid`.',
      409: 'The id_gen was handed in before with other content (`conflict`).',
    },
    handle: submitCallback,
  },
  {
    id: 'listEndpoints',
    method: 'GET',
    path: '/v1/endpoints',
    role: 'client',
    client: 'endpoints.list',
    summary: 'Every receiver called, worst first, with its health',
    description: 'A client key sees the receivers its own callbacks went to, counted over those.',
    query: [CLIENT_FILTER],
    answers: { 200: { description: 'The receivers.', schema: 'EndpointHealthList' } },
    handle: listEndpoints,
  },
  {
    id: 'getEndpoint',
    method: 'GET',
    path: '/v1/endpoints/{key}',
    role: 'client',
    client: 'endpoints.get',
    summary: "A receiver's circuit breaker",
    params: { key: HOST_PORT },
    answers: {
      200: { description: 'The circuit.', schema: 'Endpoint' },
      404: `${KEY_NOT_TEXT} Or, for a client key, a receiver none of its callbacks went to.`,
    },
    handle: getEndpoint,
  },
  {
    id: 'recoverEndpoint',
    method: 'POST',
    path: '/v1/endpoints/{key}/recover',
    role: 'client',
    client: 'endpoints.recover',
    summary: "Queue again, as redeliver would, the receiver's dead callbacks that ended since a time",
    params: { key: HOST_PORT },
    body: { type: 'application/json', schema: 'Recover' },
    answers: {
      202: { description: 'Queued again (none: 0).', schema: 'Recovered' },
      400:
        '`since` is not an RFC 3339 time with its zone (`invalid_since`), or the body has another ' +
        'shape (`invalid_request`, `invalid_json`).',
      404: KEY_NOT_TEXT,
      413: OVER_64_KIB,
      415: NOT_JSON,
    },
    handle: recoverEndpoint,
  },
  {
    id: 'getStats',
    method: 'GET',
    path: '/v1/stats',
    role: 'client',
    client: 'stats',
    summary: 'Attempts over time in equal buckets: 1 min for 1h, 15 min for 24h',
    query: [
      { name: 'window', schema: { type: 'string', enum: Object.keys(STATS_WINDOWS), default: '1h' } },
      CLIENT_FILTER,
    ],
    answers: {
      200: { description: 'The buckets.', schema: 'Stats' },
      400: 'An unknown window (`invalid_request`).',
    },
    handle: getStats,
  },
  {
    id: 'listKeys',
    method: 'GET',
    path: '/v1/keys',
    role: 'admin',
    client: 'keys.list',
    summary: 'Every API key, revoked ones included (never the key itself)',
    answers: { 200: { description: 'The keys.', schema: 'KeyList' } },
    handle: listKeys,
  },
  {
    id: 'createKey',
    method: 'POST',
    path: '/v1/keys',
    role: 'admin',
    client: 'keys.create',
    summary: 'Make a key for a client',
    body: { type: 'application/json', schema: 'CreateKey' },
    answers: {
      201: { description: 'The key, shown this once.', schema: 'CreatedKey' },
      400: 'The body is invalid (`invalid_request`).',
      413: OVER_64_KIB,
      415: NOT_JSON,
    },
    handle: createKey,
  },
  {
    id: 'revokeKey',
    method: 'DELETE',
    path: '/v1/keys/{key_id}',
    role: 'admin',
    client: 'keys.revoke',
    summary: 'Revoke a key: every process refuses it within 5 s',
    answers: { 204: 'Revoked (again: nothing changes).', 404: 'No such key.' },
    handle: revokeKey,
  },
  {
    id: 'getWebhookSecret',
    method: 'GET',
    path: '/v1/webhooks/secret',
    role: 'client',
    client: 'webhooks.secret',
    summary: "The calling client's signing secret, to verify its callbacks with",
    answers: {
      200: { description: 'The secret.', schema: 'WebhookSecret' },
      404: 'Client `default` has no secret configured: its callbacks go unsigned.',
    },
    handle: getWebhookSecret,
  },
  {
    id: 'rotateWebhookSecret',
    method: 'POST',
    path: '/v1/webhooks/secret/rotate',
    role: 'client',
    client: 'webhooks.rotate',
    summary: 'A new signing secret; the old one signs too for the overlap (`--secret-overlap`, 24 h)',
    answers: {
      200: { description: 'The new secret.', schema: 'WebhookSecret' },
      409: "Client `default`'s secret is configured (`--secret`): rotate it there (`conflict`).",
    },
    handle: rotateWebhookSecret,
  },
  {
    id: 'getHealth',
    method: 'GET',
    path: '/healthz',
    role: 'open',
    summary: 'Liveness',
    answers: {
      200: {
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
    handle: health,
  },
  {
    id: 'getReadiness',
    method: 'GET',
    path: '/readyz',
    role: 'open',
    summary: 'Readiness: the database and the blob store answer',
    description:
      'Each check is probed at most every 2 s, however often this is asked; a probe with no answer in 5 s fails.',
    answers: {
      200: { description: 'Ready: every check is `ok`.', schema: 'Readiness' },
      503: {
        description: 'Not ready: a failing check holds the first line of what went wrong.',
        schema: 'Readiness',
      },
    },
    handle: ready,
  },
  {
    id: 'getMetrics',
    method: 'GET',
    path: '/metrics',
    role: 'open',
    summary: 'Prometheus metrics',
    answers: {
      200: {
        description: 'The Prometheus text exposition format, version 0.0.4.',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
    },
    handle: metricsPage,
  },
  {
    id: 'getOpenApi',
    method: 'GET',
    path: '/openapi.json',
    role: 'open',
    summary: 'This document',
    answers: {
      200: { description: 'OpenAPI 3.1.', content: { 'application/json': { schema: { type: 'object' } } } },
    },
    handle: openApi,
  },
  {
    id: 'getDashboard',
    method: 'GET',
    path: '/',
    role: 'open',
    summary: 'The dashboard (HTML)',
    answers: {
      200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } },
    },
    handle: dashboard,
  },
];
