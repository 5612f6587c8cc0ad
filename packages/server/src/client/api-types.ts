/**
 * The service's API as TypeScript types: what its routes take and answer, as `/openapi.json`
 * describes them. Written here only: the store's resources and the handlers' answers are
 * these types, so the client's cannot drift from what the server sends.
 */

export type Family = 'A' | 'B';
export type OperationKind = 'image' | 'video';
export type OperationState = 'queued' | 'running' | 'succeeded' | 'failed';
export type CallbackState = 'pending' | 'delivering' | 'retrying' | 'delivered' | 'dead' | 'gone';
export type CircuitState = 'closed' | 'open' | 'half_open';
export type StatsWindow = '1h' | '24h';

/** The body of `POST /v1/operations`. */
export interface CreateOperation {
  kind: OperationKind;
  family: Family;
  webhook_url: string;
  prompt: string;
  /** Makes the generator fail with this text, to exercise error callbacks. */
  fail_with?: string;
  /** Overrides the callback's `status` part (`success` / `error` by default). */
  status?: string;
}

/** One attempt to deliver a callback. */
export interface Attempt {
  /** RFC 3339 start time. */
  at: string;
  duration_ms: number;
  /** The receiver's status code, or null when there was no answer. */
  status_code: number | null;
  /** Why it failed without an answer (or a refused redirect), else null. */
  error: string | null;
  /** The first bytes (up to 1 KiB) of the receiver's answer, as text. */
  response_head: string | null;
  /** The headers sent (signature included); null when none was sent (refused before dialling). */
  request_headers: Record<string, string> | null;
  /** The answer's headers (a repeated one joined by `, `); null without an answer. */
  response_headers: Record<string, string> | null;
}

/** An operation and its callback's delivery. */
export interface Operation {
  /** UUIDv7 (or the `id_gen` handed in): the idempotency key of the callback. */
  id_gen: string;
  /** The client whose key created it: its secret signs the callback. */
  client: string;
  /** `external` for an outcome handed in through `POST /v1/callbacks`. */
  kind: OperationKind | 'external';
  family: Family;
  state: OperationState;
  webhook_url: string;
  created_at: string;
  finished_at: string | null;
  /** Why a failed operation failed; null otherwise. */
  error_message: string | null;
  callback: {
    state: CallbackState;
    /** The `status` part the callback carries; null until the operation has finished. */
    status: string | null;
    next_attempt_at: string | null;
    attempts: Attempt[];
  };
}

/** The filters and page of `GET /v1/operations`. */
export interface ListOperationsQuery {
  state?: OperationState;
  family?: Family;
  callback_state?: CallbackState;
  /** `host:port` of the webhook URL. */
  endpoint?: string;
  /** 1 to 500 (50). */
  limit?: number;
  /** The `next_before` of the page before. */
  before?: string;
  /** An admin key's view of one client only (a client key always sees its own). */
  client?: string;
}

export interface OperationList {
  operations: Operation[];
  /** The cursor of the next page (`before`); null on the last. */
  next_before: string | null;
}

/** One receiver (`host:port`) and its health. */
export interface EndpointHealth {
  key: string;
  circuit_state: CircuitState;
  callbacks: Record<CallbackState, number>;
  last_attempt_at: string | null;
  last_error: string | null;
  success_rate_1h: number | null;
  latency_ms: { p50: number; p95: number } | null;
}

export interface EndpointHealthList {
  endpoints: EndpointHealth[];
}

/** A receiver's circuit breaker. */
export interface Endpoint {
  key: string;
  circuit_state: CircuitState;
  consecutive_failures: number;
  open_until: string | null;
}

export interface Recovered {
  /** How many dead callbacks were queued again. */
  requeued: number;
}

export interface StatsBucket {
  start: string;
  delivered: number;
  failed: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

export interface Stats {
  buckets: StatsBucket[];
}

/** An API key as `GET /v1/keys` shows it: never the key itself. */
export interface ApiKey {
  key_id: string;
  client: string;
  role: 'client' | 'admin';
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface KeyList {
  keys: ApiKey[];
}

/** The body of `POST /v1/keys`. */
export interface CreateKey {
  client: string;
  /** `client` when left out. */
  role?: 'client' | 'admin';
  /** A duration such as `12h` or `30d`; never expires when left out. */
  expires_in?: string;
}

/** A new key, shown this once. */
export interface CreatedKey {
  key: string;
  key_id: string;
  client: string;
  role: 'client' | 'admin';
  expires_at: string | null;
}

/** The calling client's signing secret. */
export interface WebhookSecret {
  secret: string;
}
