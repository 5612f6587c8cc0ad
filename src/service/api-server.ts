import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DirectoryBlobStore } from '../delivery/index.ts';
import { uuidv7 } from '../ids/uuidv7.ts';
import { CALLBACK_STATES, OPERATION_STATES, type Store } from '../store/index.ts';
import { dashboardPage } from '../web/dashboard-page.ts';
import { ApiError, apiErrorResponse } from './api-error.ts';
import type { Logger } from './json-log.ts';
import { openApiDocument } from './openapi-document.ts';
import { parseCreateOperation } from './request-validation.ts';
import type { ServiceMetrics } from './service-metrics.ts';

export interface ApiOptions {
  store: Store;
  blobs: DirectoryBlobStore;
  metrics: ServiceMetrics;
  log: Logger;
}

const MAX_JSON_BYTES = 64 * 1024;
const OPERATION_PATH = /^\/v1\/operations\/([^/]+)(\/redeliver|\/result)?$/;
const ENDPOINT_PATH = /^\/v1\/endpoints\/([^/]+)$/;

/** SHA-256 of an API key, as the store keeps it. */
export function apiKeyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(type)) {
    throw new ApiError(415, 'unsupported_media_type', 'send the request body as application/json');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_JSON_BYTES)
      throw new ApiError(413, 'body_too_large', `the body is over ${MAX_JSON_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new ApiError(400, 'invalid_json', 'the body is not valid JSON');
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

function sendText(res: ServerResponse, status: number, type: string, text: string): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

function oneOf<T extends string>(name: string, value: string | null, allowed: readonly T[]): T | undefined {
  if (value === null) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ApiError(400, 'invalid_request', `${name} takes one of ${allowed.join(', ')}`);
  }
  return value as T;
}

/**
 * The service's HTTP API (PRODUCT §4) as a `node:http` handler: operations, redelivery,
 * OpenAPI, health, metrics and the dashboard. With API keys in the store, `/v1` asks for
 * `Authorization: Bearer <key>`.
 *
 * @example
 * http.createServer(createApiHandler({ store, blobs, metrics, log })).listen(8080, '127.0.0.1');
 */
export function createApiHandler(options: ApiOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { store, blobs, metrics, log } = options;
  const openapi = JSON.stringify(openApiDocument());

  async function authorize(req: IncomingMessage): Promise<void> {
    if ((await store.countApiKeys()) === 0) return;
    const match = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!match || !(await store.findApiKey(apiKeyHash(match[1]!)))) {
      throw new ApiError(401, 'unauthorized', 'an API key is required: Authorization: Bearer <key>');
    }
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (method === 'GET' && path === '/healthz') return sendJson(res, 200, { ok: true });
    if (method === 'GET' && path === '/openapi.json') return sendText(res, 200, 'application/json', openapi);
    if (method === 'GET' && path === '/metrics') {
      return sendText(res, 200, 'text/plain; version=0.0.4', metrics.render(await store.queueDepth()));
    }
    if (method === 'GET' && path === '/')
      return sendText(res, 200, 'text/html; charset=utf-8', dashboardPage());
    if (!path.startsWith('/v1/')) throw new ApiError(404, 'not_found', `no such resource: ${path}`);
    await authorize(req);

    if (path === '/v1/operations') {
      if (method === 'POST') {
        const request = parseCreateOperation(await readJson(req));
        const id = uuidv7();
        await store.createOperation({
          id_gen: id,
          kind: request.kind,
          family: request.family,
          webhook_url: request.webhook_url,
          prompt: request.prompt,
          fail_with: request.fail_with ?? null,
          status_text: request.status ?? null,
        });
        metrics.operationCreated(request.kind, request.family);
        log('info', 'operation_created', { id_gen: id, kind: request.kind, family: request.family });
        return sendJson(res, 202, await store.getOperation(id));
      }
      if (method === 'GET') {
        const limit = Number(url.searchParams.get('limit') ?? 50);
        if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
          throw new ApiError(400, 'invalid_request', 'limit takes 1 to 500');
        }
        const operations = await store.listOperations({
          limit,
          state: oneOf('state', url.searchParams.get('state'), OPERATION_STATES),
          family: oneOf('family', url.searchParams.get('family'), ['A', 'B'] as const),
          callbackState: oneOf('callback_state', url.searchParams.get('callback_state'), CALLBACK_STATES),
          endpoint: url.searchParams.get('endpoint') ?? undefined,
          before: url.searchParams.get('before') ?? undefined,
        });
        const last = operations.length === limit ? operations[operations.length - 1]!.id_gen : null;
        return sendJson(res, 200, { operations, next_before: last });
      }
      throw new ApiError(405, 'method_not_allowed', `${method} is not allowed on ${path}`);
    }

    const endpoint = ENDPOINT_PATH.exec(path);
    if (endpoint) {
      if (method !== 'GET')
        throw new ApiError(405, 'method_not_allowed', `${method} is not allowed on ${path}`);
      const record = await store.getEndpoint(decodeURIComponent(endpoint[1]!));
      return sendJson(res, 200, {
        key: record.key,
        circuit_state: record.circuit_state,
        consecutive_failures: record.consecutive_failures,
        open_until: record.open_until === null ? null : new Date(record.open_until).toISOString(),
      });
    }

    const match = OPERATION_PATH.exec(path);
    if (!match) throw new ApiError(404, 'not_found', `no such resource: ${path}`);
    const id = decodeURIComponent(match[1]!);
    const action = match[2];
    if (action === '/redeliver') {
      if (method !== 'POST') throw new ApiError(405, 'method_not_allowed', 'redeliver takes POST');
      await store.redeliver(id);
      log('info', 'callback_redelivered', { id_gen: id });
      return sendJson(res, 202, await store.getOperation(id));
    }
    if (method !== 'GET')
      throw new ApiError(405, 'method_not_allowed', `${method} is not allowed on ${path}`);
    if (action === '/result') {
      const record = await store.getOperationRecord(id);
      if (!record?.result || !(await blobs.exists(record.result.key))) {
        throw new ApiError(404, 'not_found', 'this operation has no result file (any more)');
      }
      res.writeHead(200, {
        'content-type': record.result.media_type,
        'content-length': record.result.bytes,
        'cache-control': 'no-store',
      });
      createReadStream(blobs.pathOf(record.result.key)).pipe(res);
      return;
    }
    const operation = await store.getOperation(id);
    if (!operation) throw new ApiError(404, 'not_found', `no operation ${id}`);
    return sendJson(res, 200, operation);
  }

  return (req, res) => {
    route(req, res).catch((error: unknown) => {
      const { status, body } = apiErrorResponse(error);
      if (status >= 500) log('error', 'api_error', { path: req.url, error });
      if (res.headersSent) res.destroy();
      else sendJson(res, status, body);
    });
  };
}
