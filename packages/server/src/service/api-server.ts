import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BlobStore } from '../delivery/index.ts';
import { FAMILIES, uuidv7 } from 'mediahook/protocol';
import { CALLBACK_STATES, OPERATION_STATES, type Store } from '../store/index.ts';
import { DASHBOARD_HEADERS, dashboardPage } from '../web/dashboard-page.ts';
import {
  allowedHostsOf,
  allowedOriginsOf,
  hostAllowed,
  hostHint,
  hostNotAllowedMessage,
  oncePerHost,
  requestTargetOf,
  sendRevalidated,
} from 'mediahook/web';
import { requestHeadError } from './api-http-server.ts';
import { sendBlobAnswer } from './blob-answer.ts';
import { readMultipartSubmission } from './submission/multipart-submission.ts';
import { submitCallback } from './submission/submit-callback.ts';
import {
  ApiError,
  apiErrorResponse,
  crossSiteRequest,
  hostNotAllowed,
  methodNotAllowed,
  unauthorized,
} from './api-error.ts';
import { corsHeaders, crossSiteReason, isAllowedPreflight, PREFLIGHT_HEADERS } from './cross-site.ts';
import type { Logger } from './json-log.ts';
import { openApiDocument } from './openapi-document.ts';
import { MAX_JSON_BYTES, parseCreateOperation } from './request-validation.ts';
import type { RequestDrain } from './request-drain.ts';
import type { ServiceMetrics } from './service-metrics.ts';

interface ApiOptions {
  store: Store;
  blobs: BlobStore;
  metrics: ServiceMetrics;
  log: Logger;
  /** Where requests are tracked for a graceful shutdown. */
  drain?: RequestDrain;
  /**
   * Host names answered besides IP addresses and `localhost` (`.example.com`: that name and
   * those under it; `*`: any): any other Host is `421 host_not_allowed`, against DNS rebinding.
   */
  allowedHosts?: readonly string[] | undefined;
  /** Origins whose pages may change state (POST) and read answers (CORS); others' POSTs are 403. */
  allowedOrigins?: readonly string[] | undefined;
  /** Largest result file `POST /v1/callbacks` takes (1 GiB). */
  maxSubmittedFileBytes?: number | undefined;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const JSON_TYPE = 'application/json; charset=utf-8';
const OPERATION_PATH = /^\/v1\/operations\/([^/]+)(\/redeliver|\/result)?$/;
const ENDPOINT_PATH = /^\/v1\/endpoints\/([^/]+)$/;

/** SHA-256 of an API key, as the store keeps it. */
export function apiKeyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

async function readJson(req: IncomingMessage): Promise<unknown> {
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

function send(
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

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, JSON_TYPE, JSON.stringify(body));
}

/** A resource the dashboard polls: 304 to a client that holds it already (sendRevalidated). */
function sendData(res: ServerResponse, body: unknown): void {
  sendRevalidated(res.req, res, JSON.stringify(body), { 'content-type': JSON_TYPE });
}

/**
 * The method a route sees (HEAD goes wherever GET does); throws 405 with `Allow` when the
 * route does not take it.
 */
function methodOf(req: IncomingMessage, path: string, allowed: readonly ('GET' | 'POST')[]): 'GET' | 'POST' {
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  const found = allowed.find((name) => name === method);
  if (found) return found;
  const allow = allowed.flatMap((name) => (name === 'GET' ? ['GET', 'HEAD'] : [name]));
  throw methodNotAllowed(req.method ?? '', path, allow.sort());
}

/** A path segment, percent-decoded; one that cannot be decoded names no resource. */
function segment(raw: string, path: string): string {
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
function queryParam(url: URL, name: string): string | null {
  const values = url.searchParams.getAll(name);
  if (values.length > 1) throw new ApiError(400, 'invalid_request', `${name} is given more than once`);
  return values[0] ?? null;
}

/** A free-text query parameter; U+0000 is refused here rather than by the store. */
function textParam(url: URL, name: string): string | undefined {
  const value = queryParam(url, name);
  if (value === null) return undefined;
  if (value.includes('\u0000'))
    throw new ApiError(400, 'invalid_request', `${name} contains a NUL character`);
  return value;
}

function oneOf<T extends string>(name: string, value: string | null, allowed: readonly T[]): T | undefined {
  if (value === null) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ApiError(400, 'invalid_request', `${name} takes one of ${allowed.join(', ')}`);
  }
  return value as T;
}

/**
 * The service's HTTP API (packages/server/docs/service.md, API) as a `node:http` handler: operations, redelivery,
 * OpenAPI, health, metrics and the dashboard. With API keys in the store, `/v1` asks for
 * `Authorization: Bearer <key>`. With `drain`, each request is tracked so a shutdown can wait for it.
 *
 * @example
 * http.createServer(createApiHandler({ store, blobs, metrics, log })).listen(8080, '127.0.0.1');
 */
export function createApiHandler(options: ApiOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { store, blobs, metrics, log } = options;
  const hosts = allowedHostsOf(options.allowedHosts);
  const origins = allowedOriginsOf(options.allowedOrigins);
  const hostRefused = oncePerHost((host, last) =>
    log('warn', 'host_not_allowed', { host, hint: hostHint(host, '--allowed-host', last) }),
  );
  const openapi = JSON.stringify(openApiDocument());
  /** The routes outside `/v1`, open to all, GET only: their media type and text. */
  const open = new Map<string, () => Promise<[string, string]> | [string, string]>([
    ['/healthz', () => [JSON_TYPE, '{"ok":true}']],
    ['/openapi.json', () => ['application/json', openapi]],
    [
      '/metrics',
      async () => ['text/plain; version=0.0.4; charset=utf-8', metrics.render(await store.queueDepth())],
    ],
    ['/', () => ['text/html; charset=utf-8', dashboardPage()]],
  ]);

  async function authorize(req: IncomingMessage): Promise<void> {
    if ((await store.countApiKeys()) === 0) return;
    const authorization = req.headers.authorization;
    const match = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
    if (!match || !(await store.findApiKey(apiKeyHash(match[1]!))))
      throw unauthorized(authorization !== undefined);
  }

  async function create(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    sendJson(res, 202, await store.getOperation(id));
  }

  async function submit(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { created, operation } = await readMultipartSubmission(req, (input) =>
      submitCallback(store, blobs, input, { maxFileBytes: options.maxSubmittedFileBytes }),
    );
    if (created) log('info', 'callback_submitted', { id_gen: operation.id_gen, state: operation.state });
    sendJson(res, created ? 202 : 200, operation);
  }

  async function list(url: URL, res: ServerResponse): Promise<void> {
    const text = queryParam(url, 'limit') ?? '50';
    const limit = /^\d{1,3}$/.test(text) ? Number(text) : Number.NaN;
    if (!(limit >= 1 && limit <= 500)) {
      throw new ApiError(400, 'invalid_request', 'limit takes 1 to 500');
    }
    const operations = await store.listOperations({
      limit,
      state: oneOf('state', queryParam(url, 'state'), OPERATION_STATES),
      family: oneOf('family', queryParam(url, 'family'), FAMILIES),
      callbackState: oneOf('callback_state', queryParam(url, 'callback_state'), CALLBACK_STATES),
      endpoint: textParam(url, 'endpoint'),
      before: textParam(url, 'before'),
    });
    const last = operations.length === limit ? operations[operations.length - 1]!.id_gen : null;
    sendData(res, { operations, next_before: last });
  }

  async function result(id: string, res: ServerResponse): Promise<void> {
    const record = await store.getOperationRecord(id);
    const sent =
      record?.result != null &&
      (await sendBlobAnswer(res, blobs, record.result.key, {
        'content-type': record.result.media_type,
        // Another site's page cannot embed it (<img src>) and learn from whether it loads.
        'cross-origin-resource-policy': 'same-origin',
        'cache-control': 'no-store',
      }));
    if (!sent) throw new ApiError(404, 'not_found', 'this operation has no result file (any more)');
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refusal = requestHeadError(req);
    if (refusal) throw refusal;
    const host = req.headers.host;
    if (!hostAllowed(host, hosts)) {
      hostRefused(host!);
      throw hostNotAllowed(hostNotAllowedMessage(host!));
    }
    const url = requestTargetOf(req);
    if (url === null) throw new ApiError(400, 'invalid_request', 'the request target is not a valid URL');
    const path = url.pathname;
    const page = open.get(path);
    if (page) {
      methodOf(req, path, ['GET']);
      const [type, text] = await page();
      return send(res, 200, type, text, path === '/' ? DASHBOARD_HEADERS : {});
    }
    if (!path.startsWith('/v1/')) throw new ApiError(404, 'not_found', `no such resource: ${path}`);
    // Before the key: a page of another site is refused whatever key the browser would send.
    const crossSite = crossSiteReason(req.method, req.headers, origins);
    if (crossSite !== null) throw crossSiteRequest(crossSite);
    if (isAllowedPreflight(req.method, req.headers, origins)) {
      res.writeHead(204, PREFLIGHT_HEADERS);
      return void res.end();
    }
    await authorize(req);

    if (path === '/v1/callbacks') {
      methodOf(req, path, ['POST']);
      return submit(req, res);
    }
    if (path === '/v1/operations') {
      return methodOf(req, path, ['GET', 'POST']) === 'POST' ? create(req, res) : list(url, res);
    }

    const endpoint = ENDPOINT_PATH.exec(path);
    if (endpoint) {
      methodOf(req, path, ['GET']);
      const record = await store.getEndpoint(segment(endpoint[1]!, path));
      // An open circuit whose pause is over has its next attempt as the probe, whenever one is
      // due: half-open already, although the store marks it so only when it claims that attempt.
      const paused = record.circuit_state === 'open' && record.open_until! > Date.now();
      return sendData(res, {
        key: record.key,
        circuit_state: record.circuit_state === 'open' && !paused ? 'half_open' : record.circuit_state,
        consecutive_failures: record.consecutive_failures,
        open_until: record.open_until === null ? null : new Date(record.open_until).toISOString(),
      });
    }

    const match = OPERATION_PATH.exec(path);
    if (!match) throw new ApiError(404, 'not_found', `no such resource: ${path}`);
    const id = segment(match[1]!, path);
    const action = match[2];
    if (action === '/redeliver') {
      methodOf(req, path, ['POST']);
      await store.redeliver(id);
      log('info', 'callback_redelivered', { id_gen: id });
      return sendJson(res, 202, await store.getOperation(id));
    }
    methodOf(req, path, ['GET']);
    if (action === '/result') return result(id, res);
    const operation = await store.getOperation(id);
    if (!operation) throw new ApiError(404, 'not_found', `no operation ${id}`);
    return sendData(res, operation);
  }

  return (req, res) => {
    res.setHeader('x-content-type-options', 'nosniff');
    for (const [name, value] of Object.entries(corsHeaders(req.headers, origins))) res.setHeader(name, value);
    const handled = route(req, res).catch((error: unknown) => {
      const { status, headers, body } = apiErrorResponse(error);
      if (status >= 500) log('error', 'api_error', { path: req.url, error });
      if (res.headersSent) res.destroy();
      else send(res, status, JSON_TYPE, JSON.stringify(body), headers);
    });
    options.drain?.track(res, handled);
  };
}
