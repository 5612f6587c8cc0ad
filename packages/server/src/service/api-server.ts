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
} from 'mediahook/internal';
import { requestHeadError } from './api-http-server.ts';
import { sendBlobAnswer } from './blob-answer.ts';
import { readMultipartSubmission } from './submission/multipart-submission.ts';
import { submitCallback } from './submission/submit-callback.ts';
import { ApiError, apiErrorResponse, crossSiteRequest, hostNotAllowed, unauthorized } from './api-error.ts';
import {
  JSON_TYPE,
  methodOf,
  oneOf,
  queryParam,
  readJson,
  segment,
  send,
  sendData,
  sendJson,
  textParam,
} from './api-exchange.ts';
import { corsHeaders, crossSiteReason, isAllowedPreflight, PREFLIGHT_HEADERS } from './cross-site.ts';
import type { Logger } from './json-log.ts';
import { openApiDocument } from './openapi-document.ts';
import { operatorRoute } from './operator-routes.ts';
import { parseCreateOperation } from './request-validation.ts';
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

const OPERATION_PATH = /^\/v1\/operations\/([^/]+)(\/redeliver|\/result)?$/;

/** SHA-256 of an API key, as the store keeps it. */
export function apiKeyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * The service's HTTP API (packages/server/docs/service.md, API) as a `node:http` handler:
 * operations, redelivery, the operator's view (operator-routes.ts), OpenAPI, health, metrics and
 * the dashboard. With API keys in the store, `/v1` asks for
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

    if (await operatorRoute(store, log, req, res, url)) return;

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
