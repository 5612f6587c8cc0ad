/**
 * What one route of the service's HTTP API is. Each is written once, in the route table
 * (route-table.ts); the router, `/openapi.json` and the typed client's agreement derive from it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BlobStore } from '../../delivery/index.ts';
import type { Store } from '../../store/index.ts';
import type { Caller, KeyAuthority } from '../clients/api-keys.ts';
import type { ClientSecrets } from '../clients/client-secrets.ts';
import type { SchemaName } from '../api-schemas.ts';
import type { Logger } from '../json-log.ts';
import type { Readiness } from '../readiness.ts';
import type { ServiceMetrics } from '../service-metrics.ts';

export type Method = 'GET' | 'POST' | 'DELETE';

/**
 * Who may call a route: anyone (`open`: pages, health, metrics), any valid API key (`client`),
 * or an administrator's key (`admin`). Without any key in the store every route but the
 * `admin` ones is open, as client `default`.
 */
export type Role = 'open' | 'client' | 'admin';

/** What every handler is given besides its request: the service's parts. */
export interface ApiContext {
  store: Store;
  blobs: BlobStore;
  metrics: ServiceMetrics;
  log: Logger;
  /** Largest result file `POST /v1/callbacks` takes. */
  maxSubmittedFileBytes: number | undefined;
  /** `/openapi.json`'s text, derived from the table once. */
  openapi: string;
  /** `/readyz`'s verdict, each check probed at most every 2 s (readiness.ts). */
  readiness: () => Promise<Readiness>;
  /** API keys as checked, with their short cache (forgotten when this process changes one). */
  keys: KeyAuthority;
  /** Clients' signing secrets. */
  secrets: ClientSecrets;
}

/** One request as a handler sees it: the path's parameters are percent-decoded already. */
interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: Readonly<Record<string, string>>;
  /** Who calls: the scope of every store query a handler makes on operations is derived from it. */
  caller: Caller;
}

export type RouteHandler = (exchange: Exchange, context: ApiContext) => Promise<void> | void;

/** A query or header parameter, as OpenAPI describes it. */
interface Parameter {
  name: string;
  description?: string;
  required?: boolean;
  schema: object;
}

/**
 * An answer a route gives: a description alone is an error answer (`{"error":{code,message}}`);
 * `schema` names a JSON body's schema; `content` gives other media types as they are.
 */
export type RouteAnswer =
  | string
  | { description: string; schema: SchemaName }
  | { description: string; content: Record<string, { schema: object }> };

export interface Route {
  /** The OpenAPI `operationId`. */
  id: string;
  method: Method;
  /** With `{name}` for each parameter, as OpenAPI writes it: `/v1/operations/{id_gen}`. */
  path: string;
  role: Role;
  /** The typed client's method for it (`operations.create`); none for pages and scrape targets. */
  client?: string;
  summary: string;
  description?: string;
  /** Descriptions of path parameters, when the name alone does not say it. */
  params?: Readonly<Record<string, string>>;
  query?: readonly Parameter[];
  headers?: readonly Parameter[];
  body?: { type: 'application/json' | 'multipart/form-data'; schema: SchemaName };
  /** Per status. A route needing a key also answers 401, and an admin one or one that changes state 403. */
  answers: Readonly<Record<string, RouteAnswer>>;
  handle: RouteHandler;
}
