import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BlobStore, SsrfPolicy } from '../delivery/index.ts';
import { DEFAULT_CLIENT, type Store } from '../store/index.ts';
import {
  allowedHostsOf,
  allowedOriginsOf,
  type BodyGuardOptions,
  hostAllowed,
  hostHint,
  hostNotAllowedMessage,
  oncePerHost,
  requestTargetOf,
} from 'mediahook/internal';
import { requestHeadError } from './api-http-server.ts';
import {
  ApiError,
  apiErrorResponse,
  crossSiteRequest,
  hostNotAllowed,
  methodNotAllowed,
} from './api-error.ts';
import { type Caller, KeyAuthority, requireAdmin } from './clients/api-keys.ts';
import type { ClientSecrets } from './clients/client-secrets.ts';
import { JSON_TYPE, segment, send } from './api-exchange.ts';
import { corsHeaders, crossSiteReason, isAllowedPreflight, preflightHeaders } from './cross-site.ts';
import type { Logger } from './json-log.ts';
import { openApiDocument } from './openapi-document.ts';
import { readinessOf } from './readiness.ts';
import type { RequestDrain } from './request-drain.ts';
import type { ApiContext, Role } from './routes/route.ts';
import { ROUTES } from './routes/route-table.ts';
import { uploadGuardsOf } from './submission/upload-guards.ts';
import { routerOf } from './routes/router.ts';
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
  /** The delivery's SSRF policy: webhook URLs it refuses from their text are refused at creation. */
  ssrf?: SsrfPolicy | undefined;
  /**
   * How slow a hand-in's body may be (`POST /v1/callbacks`): nothing for `idleTimeoutMs` (30 s),
   * or under `minBytesPerSecond` (64 KiB/s) over `rateWindowMs` (30 s), is `408 upload_too_slow`.
   */
  uploadGuards?: BodyGuardOptions | undefined;
  /** Clients' signing secrets (the same the delivery worker signs with). */
  secrets: ClientSecrets;
}

/** The caller of an open route: nobody in particular, seeing what client `default` would. */
const ANONYMOUS: Caller = { client: DEFAULT_CLIENT, role: 'client', keyId: null };

/**
 * The service's HTTP API (packages/server/docs/service.md, API) as a `node:http` handler: the
 * routes of the route table (routes/route-table.ts) behind the Host check, the cross-site rule,
 * CORS and, with API keys in the store, `Authorization: Bearer <key>` (whose client and role
 * each handler is given as its caller). With `drain`, each
 * request is tracked so a shutdown can wait for it.
 *
 * @example
 * http.createServer(createApiHandler({ store, blobs, metrics, log })).listen(8080, '127.0.0.1');
 */
export function createApiHandler(options: ApiOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { store, log } = options;
  const hosts = allowedHostsOf(options.allowedHosts);
  const origins = allowedOriginsOf(options.allowedOrigins);
  const hostRefused = oncePerHost((host, last) =>
    log('warn', 'host_not_allowed', { host, hint: hostHint(host, '--allowed-host', last) }),
  );
  const context: ApiContext = {
    store,
    blobs: options.blobs,
    metrics: options.metrics,
    log,
    maxSubmittedFileBytes: options.maxSubmittedFileBytes,
    ssrf: options.ssrf ?? {},
    uploadGuards: uploadGuardsOf(options.uploadGuards),
    openapi: JSON.stringify(openApiDocument()),
    readiness: readinessOf(store, options.blobs),
    keys: new KeyAuthority(store, { onError: (error) => log('warn', 'key_touch_failed', { error }) }),
    secrets: options.secrets,
  };
  const destinationOf = routerOf(ROUTES);
  const guarded = ROUTES.filter((route) => route.role !== 'open');
  const preflight = preflightHeaders(
    guarded.map((route) => route.method),
    guarded.flatMap((route) => (route.headers ?? []).map((header) => header.name)),
  );

  /** The caller a route's role asks for: any valid key (keyless: client `default`), or an admin's. */
  async function authorize(req: IncomingMessage, role: Role): Promise<Caller> {
    if (role === 'open') return ANONYMOUS;
    const caller = await context.keys.authenticate(req.headers.authorization);
    if (role === 'admin') requireAdmin(caller);
    return caller;
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
    const { route, rawParams, allowed, guarded } = destinationOf(req.method, path);
    let caller = ANONYMOUS;
    if (guarded) {
      // Before the key: a page of another site is refused whatever key the browser would send.
      const crossSite = crossSiteReason(req.method, req.headers, origins);
      if (crossSite !== null) throw crossSiteRequest(crossSite);
      if (isAllowedPreflight(req.method, req.headers, origins)) {
        res.writeHead(204, preflight);
        return void res.end();
      }
      caller = await authorize(req, route?.role ?? 'client');
    }
    if (allowed.length === 0) throw new ApiError(404, 'not_found', `no such resource: ${path}`);
    const params = Object.fromEntries(
      Object.entries(rawParams).map(([name, raw]) => [name, segment(raw, path)]),
    );
    if (!route) throw methodNotAllowed(req.method ?? '', path, allowed);
    await route.handle({ req, res, url, params, caller }, context);
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
