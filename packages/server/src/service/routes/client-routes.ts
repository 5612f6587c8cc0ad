/**
 * The handlers of clients' keys and secrets: `GET/POST /v1/keys` and `DELETE /v1/keys/{key_id}`
 * (admin keys; the table says so), `GET /v1/webhooks/secret` and `POST /v1/webhooks/secret/rotate`
 * (the calling client's own).
 */
import { ApiError } from '../api-error.ts';
import { readJson, sendJson } from '../api-exchange.ts';
import { createApiKey, keyView, parseKeyLifetime } from '../clients/api-keys.ts';
import { parseCreateKey } from '../request-validation.ts';
import type { RouteHandler } from './route.ts';

export const listKeys: RouteHandler = async ({ res }, { store }) => {
  sendJson(res, 200, { keys: (await store.listApiKeys()).map(keyView) });
};

/** `{"client","role"?,"expires_in"?}` → 201 with the key, shown this once. */
export const createKey: RouteHandler = async ({ req, res, caller }, { store, keys, log }) => {
  const request = parseCreateKey(await readJson(req));
  let expiresInMs: number | undefined;
  try {
    expiresInMs = request.expires_in === undefined ? undefined : parseKeyLifetime(request.expires_in);
  } catch (error) {
    throw new ApiError(400, 'invalid_request', `expires_in: ${(error as Error).message}`);
  }
  const role = request.role ?? 'client';
  const { created } = await createApiKey(store, { client: request.client, role, expiresInMs });
  keys.forget();
  log('info', 'key_created', { key_id: created.key_id, client: created.client, role, by: caller.keyId });
  sendJson(res, 201, created);
};

export const revokeKey: RouteHandler = async ({ res, params, caller }, { store, keys, log }) => {
  const record = await store.revokeApiKey(params['key_id']!);
  keys.forget();
  log('info', 'key_revoked', { key_id: record.key_id, client: record.client, by: caller.keyId });
  res.writeHead(204, { 'cache-control': 'no-store' }).end();
};

export const getWebhookSecret: RouteHandler = async ({ res, caller }, { secrets }) => {
  sendJson(res, 200, { secret: await secrets.secretOf(caller.client) });
};

export const rotateWebhookSecret: RouteHandler = async ({ res, caller }, { secrets, log }) => {
  const secret = await secrets.rotate(caller.client);
  log('info', 'secret_rotated', { client: caller.client, by: caller.keyId });
  sendJson(res, 200, { secret });
};
