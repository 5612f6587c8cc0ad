/**
 * What one route of the service's HTTP API is. Each is written once, in the route table
 * (route-table.ts); the router, `/openapi.json` and the typed client's agreement derive from it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BlobStore } from '../../delivery/index.ts';
import type { Store } from '../../store/index.ts';
import type { SchemaName } from '../api-schemas.ts';
import type { Logger } from '../json-log.ts';
import type { ServiceMetrics } from '../service-metrics.ts';

export type Method = 'GET' | 'POST' | 'DELETE';

/**
 * Who may call a route: anyone (`open`: pages, health, metrics), any valid API key (`client`),
 * or an administrator's key (`admin`). Without any key in the store every route is open.
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
}

/** One request as a handler sees it: the path's parameters are percent-decoded already. */
interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: Readonly<Record<string, string>>;
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
  /** Per status. A route needing a key also answers 401, and one that changes state 403. */
  answers: Readonly<Record<string, RouteAnswer>>;
  handle: RouteHandler;
}
