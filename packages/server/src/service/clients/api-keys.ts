/**
 * API keys as the service checks them: made and hashed, looked up with a short cache (a revoked
 * or expired key is refused by every process within `cacheMs`), and the caller each names.
 */
import { createHash, randomBytes } from 'node:crypto';
import { parseDuration } from 'mediahook/internal';
import {
  ALL_CLIENTS,
  type ApiKeyRecord,
  type ApiKeyStore,
  type ClientScope,
  DEFAULT_CLIENT,
  type KeyRole,
} from '../../store/index.ts';
import { ApiError, unauthorized } from '../api-error.ts';

/** Who calls: the client a key belongs to and its role (keyless mode: `default`, as a client). */
export interface Caller {
  client: string;
  role: KeyRole;
  /** Null in keyless mode. */
  keyId: string | null;
}

/** SHA-256 of an API key, as the store keeps it. */
export function apiKeyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

const DAY_MS = 86_400_000;

/**
 * A key's lifetime: a duration as elsewhere (`12h`, `90m`) or whole days (`30d`), one minute
 * to ten years; a RangeError saying what is expected otherwise.
 */
export function parseKeyLifetime(text: string): number {
  const days = /^\s*(\d{1,4})d\s*$/.exec(text);
  const ms = days ? Number(days[1]) * DAY_MS : parseDuration(text, { min: 60_000, max: 3650 * DAY_MS });
  if (ms < 60_000 || ms > 3650 * DAY_MS) throw new RangeError(`"${text}" must be 1m to 3650d`);
  return ms;
}

/** What a new key is made of; the client's name is checked by the store. */
interface KeyRequest {
  client: string;
  role: KeyRole;
  /** Lifetime in ms; undefined: it never expires. */
  expiresInMs?: number | undefined;
  label?: string | null | undefined;
}

/**
 * Makes a key (`mh_` and 32 random bytes) and records its hash: the key, shown once, and what
 * `keys create --json` and `POST /v1/keys` answer.
 *
 * @example
 * const { created } = await createApiKey(store, { client: 'acme', role: 'client' });
 */
export async function createApiKey(store: ApiKeyStore, request: KeyRequest) {
  const key = `mh_${randomBytes(32).toString('base64url')}`;
  const now = Date.now();
  const record = await store.addApiKey({
    hash: apiKeyHash(key),
    prefix: key.slice(0, 7),
    client: request.client,
    role: request.role,
    label: request.label ?? null,
    created_at: now,
    expires_at: request.expiresInMs === undefined ? null : now + request.expiresInMs,
  });
  const view = keyView(record);
  return {
    record,
    created: { key, key_id: view.key_id, client: view.client, role: view.role, expires_at: view.expires_at },
  };
}

/** The keys as `keys list` and `GET /v1/keys` show them: never the key. */
export function keyView(record: ApiKeyRecord) {
  const time = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    key_id: record.key_id,
    client: record.client,
    role: record.role,
    created_at: time(record.created_at),
    expires_at: time(record.expires_at),
    last_used_at: time(record.last_used_at),
    revoked_at: time(record.revoked_at),
  };
}

/**
 * Whose operations the caller sees: an admin every client's (or the one `requested`), a client
 * its own whatever it asks. Keyless, the store holds client `default`'s alone: it sees them as
 * before there were clients (a receiver's circuit too, called or not).
 */
export function scopeOf(caller: Caller, requested?: string): ClientScope {
  if (caller.role !== 'admin' && caller.keyId !== null) return caller.client;
  return requested ?? ALL_CLIENTS;
}

/** 403 to a client key on a route for admin keys. */
export function requireAdmin(caller: Caller): void {
  if (caller.role !== 'admin') throw new ApiError(403, 'forbidden', 'this needs an admin key');
}

const KEYLESS: Caller = { client: DEFAULT_CLIENT, role: 'client', keyId: null };
const BEARER = /^Bearer\s+(\S+)$/i;
/** How often a key's last use is written, at most, per process. */
const TOUCH_EVERY_MS = 60_000;

interface Cached {
  at: number;
  record: ApiKeyRecord | undefined;
}

/**
 * @example
 * const keys = new KeyAuthority(store);
 * const caller = await keys.authenticate(req.headers.authorization);
 */
export class KeyAuthority {
  readonly #store: ApiKeyStore;
  readonly #cacheMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #cache = new Map<string, Cached>();
  readonly #touched = new Map<string, number>();
  /** Once a key was ever created, the store is never keyless again: no need to ask. */
  #keyed = false;

  constructor(store: ApiKeyStore, options: { cacheMs?: number; onError?: (error: unknown) => void } = {}) {
    this.#store = store;
    this.#cacheMs = options.cacheMs ?? 2_000;
    this.#onError = options.onError ?? (() => {});
  }

  /** Whether no key was ever created in the store. */
  async keyless(): Promise<boolean> {
    if (!this.#keyed) this.#keyed = (await this.#store.countApiKeys()) > 0;
    return !this.#keyed;
  }

  /** The caller an `Authorization` header names; 401 for none, an unknown, revoked or expired key. */
  async authenticate(authorization: string | undefined): Promise<Caller> {
    if (await this.keyless()) return KEYLESS;
    const match = BEARER.exec(authorization ?? '');
    if (!match) throw unauthorized(authorization !== undefined);
    const record = await this.#lookup(apiKeyHash(match[1]!));
    const now = Date.now();
    if (!record || record.revoked_at !== null || (record.expires_at !== null && record.expires_at <= now)) {
      throw unauthorized(true);
    }
    this.#touch(record, now);
    return { client: record.client, role: record.role, keyId: record.key_id };
  }

  /** Forgets what was read, so that this process sees a change it made at once. */
  forget(): void {
    this.#cache.clear();
  }

  async #lookup(hash: string): Promise<ApiKeyRecord | undefined> {
    const cached = this.#cache.get(hash);
    const now = Date.now();
    if (cached && now - cached.at < this.#cacheMs) return cached.record;
    const record = await this.#store.findApiKey(hash);
    // Unknown keys are cached too, so that guessing costs no query each; the map stays small.
    if (this.#cache.size >= 10_000) this.#cache.clear();
    this.#cache.set(hash, { at: now, record });
    return record;
  }

  #touch(record: ApiKeyRecord, now: number): void {
    const last = Math.max(this.#touched.get(record.key_id) ?? 0, record.last_used_at ?? 0);
    if (now - last < TOUCH_EVERY_MS) return;
    this.#touched.set(record.key_id, now);
    this.#store.touchApiKeys([record.key_id], now).catch(this.#onError);
  }
}
