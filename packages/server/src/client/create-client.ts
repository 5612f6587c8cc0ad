import { apiErrorOf } from './api-error.ts';
import type {
  CreatedKey,
  CreateKey,
  CreateOperation,
  Endpoint,
  EndpointHealthList,
  Family,
  KeyList,
  ListOperationsQuery,
  Operation,
  OperationList,
  Recovered,
  Stats,
  StatsWindow,
  WebhookSecret,
} from './api-types.ts';
import { type MultipartBody, multipartBody, type SubmittedFile } from './multipart-body.ts';

export interface ClientOptions {
  /** Where the service answers: `http://127.0.0.1:8080` (a path prefix is kept). */
  baseUrl: string | URL;
  /** An API key (`mediahook keys create`), sent as `Authorization: Bearer <key>`. */
  key?: string | undefined;
  /** The `fetch` to call: the runtime's own by default. */
  fetch?: typeof fetch | undefined;
}

/** A hand-in: the outcome of an operation made elsewhere, a result file or an error message. */
export type SubmitCallbackInput = {
  webhook_url: string;
  family: Family;
  id_gen: string;
  /** `success` or `error` when left out. */
  status?: string;
  /** Sent as it is; the time of hand-in when left out. */
  time_gen?: string;
} & ({ file: SubmittedFile; message?: never } | { message: string; file?: never });

/** What one call sends: its route's method and path, and what fills them. */
interface Call {
  method: 'GET' | 'POST' | 'DELETE';
  /** The route's path as the route table writes it, `{name}` for each parameter. */
  path: string;
  params?: Readonly<Record<string, string>>;
  query?: Readonly<Record<string, string | number | undefined>>;
  headers?: Readonly<Record<string, string>>;
  json?: unknown;
  multipart?: MultipartBody;
}

/**
 * A typed client of the service's HTTP API, on the runtime's `fetch` (Node, Bun, Deno,
 * browsers). Every answer other than 2xx throws a {@link MediahookApiError}.
 *
 * @example
 * const client = createClient({ baseUrl: 'http://127.0.0.1:8080', key: process.env.MEDIAHOOK_KEY });
 * const operation = await client.operations.create(
 *   { kind: 'image', family: 'A', prompt: 'a lighthouse', webhook_url: 'https://app.example/hook' },
 *   { idempotencyKey: 'order-1234' },
 * );
 */
export function createClient(options: ClientOptions) {
  const base = String(options.baseUrl).replace(/\/+$/, '');
  const fetchOf = options.fetch ?? ((...args: Parameters<typeof fetch>) => fetch(...args));

  async function send(call: Call): Promise<Response> {
    const path = call.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
      encodeURIComponent(call.params![name]!),
    );
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined) query.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: 'application/json', ...call.headers };
    if (options.key !== undefined) headers['authorization'] = `Bearer ${options.key}`;
    const init: RequestInit & { duplex?: 'half' } = { method: call.method, headers };
    if (call.json !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(call.json);
    } else if (call.multipart) {
      headers['content-type'] = call.multipart.contentType;
      init.body = call.multipart.body as NonNullable<RequestInit['body']>;
      // A stream body is sent as it is read (fetch asks for `duplex` to say so).
      if (call.multipart.body instanceof ReadableStream) init.duplex = 'half';
      // Following a redirect makes fetch keep a copy of the body to send again (Node's keeps
      // the whole file): the API never redirects, so none is followed.
      init.redirect = 'error';
      if (call.multipart.length !== undefined) headers['content-length'] = String(call.multipart.length);
    }
    const search = query.toString() === '' ? '' : `?${query}`;
    const response = await fetchOf(`${base}${path}${search}`, init);
    if (!response.ok) throw await apiErrorOf(response);
    return response;
  }

  async function json<T>(call: Call): Promise<T> {
    return (await (await send(call)).json()) as T;
  }

  return {
    operations: {
      /** `POST /v1/operations`: starts an operation; `idempotencyKey` is sent as `Idempotency-Key`. */
      create: (body: CreateOperation, extra: { idempotencyKey?: string } = {}) =>
        json<Operation>({
          method: 'POST',
          path: '/v1/operations',
          json: body,
          headers: extra.idempotencyKey === undefined ? {} : { 'idempotency-key': extra.idempotencyKey },
        }),
      /** `GET /v1/operations/{id_gen}`. */
      get: (id: string) =>
        json<Operation>({ method: 'GET', path: '/v1/operations/{id_gen}', params: { id_gen: id } }),
      /** `GET /v1/operations`: newest first, a page at a time (`next_before`). */
      list: (query: ListOperationsQuery = {}) =>
        json<OperationList>({ method: 'GET', path: '/v1/operations', query: { ...query } }),
      /** `POST /v1/operations/{id_gen}/redeliver`: queues the callback again. */
      redeliver: (id: string) =>
        json<Operation>({
          method: 'POST',
          path: '/v1/operations/{id_gen}/redeliver',
          params: { id_gen: id },
        }),
      /** `GET /v1/operations/{id_gen}/result`: the result file, its body a stream not yet read. */
      result: (id: string) =>
        send({ method: 'GET', path: '/v1/operations/{id_gen}/result', params: { id_gen: id } }),
    },
    callbacks: {
      /** `POST /v1/callbacks`: hands in an outcome; a file is streamed, never held whole. */
      submit: (input: SubmitCallbackInput) => {
        const texts = (['webhook_url', 'family', 'status', 'id_gen', 'time_gen', 'message'] as const).flatMap(
          (name) => (input[name] === undefined ? [] : [[name, input[name]] as const]),
        );
        const file = input.file === undefined ? undefined : { part: 'result', file: input.file };
        return json<Operation>({
          method: 'POST',
          path: '/v1/callbacks',
          multipart: multipartBody(texts, file),
        });
      },
    },
    endpoints: {
      /** `GET /v1/endpoints`: every receiver called, worst first. */
      list: () => json<EndpointHealthList>({ method: 'GET', path: '/v1/endpoints' }),
      /** `GET /v1/endpoints/{key}`: a receiver's circuit, by its `host:port`. */
      get: (key: string) => json<Endpoint>({ method: 'GET', path: '/v1/endpoints/{key}', params: { key } }),
      /** `POST /v1/endpoints/{key}/recover`: queues again its dead callbacks that ended since `since`. */
      recover: (key: string, since: string | Date) =>
        json<Recovered>({
          method: 'POST',
          path: '/v1/endpoints/{key}/recover',
          params: { key },
          json: { since: since instanceof Date ? since.toISOString() : since },
        }),
    },
    /** `GET /v1/stats`: attempts over time. */
    stats: (window?: StatsWindow) => json<Stats>({ method: 'GET', path: '/v1/stats', query: { window } }),
    keys: {
      /** `GET /v1/keys` (an admin key): every key, never the key itself. */
      list: () => json<KeyList>({ method: 'GET', path: '/v1/keys' }),
      /** `POST /v1/keys` (an admin key): a key for a client, shown this once. */
      create: (body: CreateKey) => json<CreatedKey>({ method: 'POST', path: '/v1/keys', json: body }),
      /** `DELETE /v1/keys/{key_id}` (an admin key): refused by every process within seconds. */
      revoke: async (keyId: string): Promise<void> => {
        await send({ method: 'DELETE', path: '/v1/keys/{key_id}', params: { key_id: keyId } });
      },
    },
    webhooks: {
      /** `GET /v1/webhooks/secret`: the calling client's signing secret. */
      secret: () => json<WebhookSecret>({ method: 'GET', path: '/v1/webhooks/secret' }),
      /** `POST /v1/webhooks/secret/rotate`: a new secret; the old one signs too for the overlap. */
      rotate: () => json<WebhookSecret>({ method: 'POST', path: '/v1/webhooks/secret/rotate' }),
    },
  };
}

/** The client `createClient` makes. */
export type MediahookClient = ReturnType<typeof createClient>;
