import { FAMILIES, FAMILY_PARTS, version } from 'mediahook/protocol';
import { API_SCHEMAS, CALLBACK_SCHEMAS, callbackSchemaName } from './api-schemas.ts';
import type { Route, RouteAnswer } from './routes/route.ts';
import { ROUTES } from './routes/route-table.ts';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: string) => ({ 'application/json': { schema: ref(name) } });
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
        ...API_SCHEMAS,
        ...CALLBACK_SCHEMAS,
      },
    },
    security: [{ apiKey: [] }],
    paths: pathsOf(ROUTES),
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

/** A 403 for the routes that change state: their cross-site rule (docs/security.md). */
const CROSS_SITE = "Another site's page made the request (`cross_site_request`).";
/** A 403 for the routes of admin keys. */
const FORBIDDEN = 'A client key, or none in keyless mode, on a route for admin keys (`forbidden`).';

/** The refusals a route's role and method bring: 401 without a valid key, 403 as said above. */
function guardAnswers(route: Route): Record<string, object> {
  if (route.role === 'open') return {};
  const denied = [
    ...(route.role === 'admin' ? [FORBIDDEN] : []),
    ...(route.method === 'GET' ? [] : [CROSS_SITE]),
  ];
  return { 401: UNAUTHORIZED, ...(denied.length > 0 ? { 403: errorResponse(denied.join(' Or: ')) } : {}) };
}

function answerOf(answer: RouteAnswer): object {
  if (typeof answer === 'string') return errorResponse(answer);
  if ('schema' in answer) return { description: answer.description, content: json(answer.schema) };
  return answer;
}

/** One route as an OpenAPI Operation Object. */
function operationOf(route: Route): object {
  const parameters = [
    ...(route.query ?? []).map((parameter) => ({ ...parameter, in: 'query' })),
    ...(route.headers ?? []).map((parameter) => ({ ...parameter, in: 'header' })),
  ];
  const guarded = guardAnswers(route);
  const answers = Object.fromEntries(
    Object.entries(route.answers).map(([status, answer]) => [status, answerOf(answer)]),
  );
  return {
    operationId: route.id,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    ...(route.role === 'open' ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: { required: true, content: { [route.body.type]: { schema: ref(route.body.schema) } } },
        }
      : {}),
    // Integer keys come out in ascending order: the statuses read in order.
    responses: { ...guarded, ...answers },
  };
}

/** The routes as OpenAPI `paths`: one Path Item per path, its parameters declared once. */
function pathsOf(routes: readonly Route[]): Record<string, Record<string, unknown>> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const names = [...route.path.matchAll(/\{([^}/]+)\}/g)].map((match) => match[1]!);
    paths[route.path] ??=
      names.length === 0
        ? {}
        : {
            parameters: names.map((name) => ({
              name,
              in: 'path',
              required: true,
              schema: { type: 'string' },
              ...(route.params?.[name] ? { description: route.params[name] } : {}),
            })),
          };
    paths[route.path]![route.method.toLowerCase()] = operationOf(route);
  }
  return paths;
}
