/**
 * The routes of clients' keys and secrets: `GET/POST /v1/keys`, `DELETE /v1/keys/{key_id}`
 * (admin keys only), `GET /v1/webhooks/secret` and `POST /v1/webhooks/secret/rotate` (the
 * calling client's own). Each takes the caller and answers JSON.
 */
import { KEY_ROLES, type KeyRole, type Store } from '../../store/index.ts';
import { ApiError } from '../api-error.ts';
import type { Logger } from '../json-log.ts';
import {
  type Caller,
  createApiKey,
  type KeyAuthority,
  keyView,
  parseKeyLifetime,
  requireAdmin,
} from './api-keys.ts';
import type { ClientSecrets } from './client-secrets.ts';
import type { JsonAnswer } from './idempotency.ts';

export interface ClientRouteContext {
  store: Store;
  keys: KeyAuthority;
  secrets: ClientSecrets;
  log: Logger;
}

export async function listKeys(ctx: ClientRouteContext, caller: Caller): Promise<JsonAnswer> {
  requireAdmin(caller);
  return { status: 200, body: { keys: (await ctx.store.listApiKeys()).map(keyView) } };
}

/** `POST /v1/keys` `{"client","role"?,"expires_in"?}`: 201 with the key, shown this once. */
export async function createKey(ctx: ClientRouteContext, caller: Caller, body: unknown): Promise<JsonAnswer> {
  requireAdmin(caller);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError(400, 'invalid_request', 'the body must be a JSON object');
  }
  const { client, role = 'client', expires_in: expiresIn, ...rest } = body as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new ApiError(400, 'invalid_request', `unknown field ${unknown}`);
  if (typeof client !== 'string') throw new ApiError(400, 'invalid_request', 'client is required (text)');
  if (!KEY_ROLES.includes(role as KeyRole)) {
    throw new ApiError(400, 'invalid_request', `role takes one of ${KEY_ROLES.join(', ')}`);
  }
  let expiresInMs: number | undefined;
  if (expiresIn !== undefined) {
    if (typeof expiresIn !== 'string')
      throw new ApiError(400, 'invalid_request', 'expires_in is a duration such as 30d');
    try {
      expiresInMs = parseKeyLifetime(expiresIn);
    } catch (error) {
      throw new ApiError(400, 'invalid_request', `expires_in: ${(error as Error).message}`);
    }
  }
  const { created } = await createApiKey(ctx.store, { client, role: role as KeyRole, expiresInMs });
  ctx.keys.forget();
  ctx.log('info', 'key_created', { key_id: created.key_id, client, role, by: caller.keyId });
  return { status: 201, body: created };
}

export async function revokeKey(ctx: ClientRouteContext, caller: Caller, keyId: string): Promise<JsonAnswer> {
  requireAdmin(caller);
  await ctx.store.revokeApiKey(keyId);
  ctx.keys.forget();
  ctx.log('info', 'key_revoked', { key_id: keyId, by: caller.keyId });
  return { status: 204, body: null };
}

export async function webhookSecret(ctx: ClientRouteContext, caller: Caller): Promise<JsonAnswer> {
  return { status: 200, body: { secret: await ctx.secrets.secretOf(caller.client) } };
}

export async function rotateWebhookSecret(ctx: ClientRouteContext, caller: Caller): Promise<JsonAnswer> {
  const secret = await ctx.secrets.rotate(caller.client);
  ctx.log('info', 'secret_rotated', { client: caller.client, by: caller.keyId });
  return { status: 200, body: { secret } };
}
