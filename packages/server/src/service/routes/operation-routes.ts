/** The handlers of `/v1/operations`: start, list, read, redeliver, and the result file. */
import { FAMILIES, uuidv7 } from 'mediahook/protocol';
import type { OperationList } from '../../client/api-types.ts';
import { CALLBACK_STATES, OPERATION_STATES } from '../../store/index.ts';
import { ApiError } from '../api-error.ts';
import {
  JSON_TYPE,
  oneOf,
  queryParam,
  readJson,
  send,
  sendData,
  sendJson,
  textParam,
} from '../api-exchange.ts';
import { sendBlobAnswer } from '../blob-answer.ts';
import { type Caller, scopeOf } from '../clients/api-keys.ts';
import { idempotencyKeyOf, idempotentAnswer, type JsonAnswer } from '../clients/idempotency.ts';
import { parseCreateOperation } from '../request-validation.ts';
import type { ApiContext, RouteHandler } from './route.ts';

/** With an `Idempotency-Key`, the first request's answer stands for every repeat (idempotency.ts). */
export const createOperation: RouteHandler = async ({ req, res, caller }, context) => {
  const key = idempotencyKeyOf(req.headers['idempotency-key']);
  const body = await readJson(req);
  const create = () => startOperation(body, caller, context);
  const answer =
    key === undefined
      ? await create()
      : await idempotentAnswer(context.store, caller.client, key, body, create);
  send(res, answer.status, JSON_TYPE, JSON.stringify(answer.body), answer.headers);
};

async function startOperation(
  body: unknown,
  caller: Caller,
  { store, metrics, log }: ApiContext,
): Promise<JsonAnswer> {
  const request = parseCreateOperation(body);
  const id = uuidv7();
  await store.createOperation({
    id_gen: id,
    client: caller.client,
    kind: request.kind,
    family: request.family,
    webhook_url: request.webhook_url,
    prompt: request.prompt,
    fail_with: request.fail_with ?? null,
    status_text: request.status ?? null,
  });
  metrics.operationCreated(request.kind, request.family);
  log('info', 'operation_created', {
    id_gen: id,
    client: caller.client,
    kind: request.kind,
    family: request.family,
  });
  return { status: 202, body: await store.getOperation(caller.client, id) };
}

export const listOperations: RouteHandler = async ({ res, url, caller }, { store }) => {
  const text = queryParam(url, 'limit') ?? '50';
  const limit = /^\d{1,3}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= 500)) {
    throw new ApiError(400, 'invalid_request', 'limit takes 1 to 500');
  }
  const operations = await store.listOperations(scopeOf(caller, textParam(url, 'client')), {
    limit,
    state: oneOf('state', queryParam(url, 'state'), OPERATION_STATES),
    family: oneOf('family', queryParam(url, 'family'), FAMILIES),
    callbackState: oneOf('callback_state', queryParam(url, 'callback_state'), CALLBACK_STATES),
    endpoint: textParam(url, 'endpoint'),
    before: textParam(url, 'before'),
  });
  const last = operations.length === limit ? operations[operations.length - 1]!.id_gen : null;
  sendData(res, { operations, next_before: last } satisfies OperationList);
};

export const getOperation: RouteHandler = async ({ res, params, caller }, { store }) => {
  const operation = await store.getOperation(scopeOf(caller), params['id_gen']!);
  if (!operation) throw new ApiError(404, 'not_found', `no operation ${params['id_gen']}`);
  sendData(res, operation);
};

export const redeliver: RouteHandler = async ({ res, params, caller }, { store, log }) => {
  const id = params['id_gen']!;
  const scope = scopeOf(caller);
  await store.redeliver(scope, id);
  log('info', 'callback_redelivered', { id_gen: id });
  sendJson(res, 202, await store.getOperation(scope, id));
};

export const getResult: RouteHandler = async ({ res, params, caller }, { store, blobs }) => {
  const record = await store.getOperationRecord(scopeOf(caller), params['id_gen']!);
  const sent =
    record?.result != null &&
    (await sendBlobAnswer(res, blobs, record.result.key, {
      'content-type': record.result.media_type,
      // Another site's page cannot embed it (<img src>) and learn from whether it loads.
      'cross-origin-resource-policy': 'same-origin',
      'cache-control': 'no-store',
    }));
  if (!sent) throw new ApiError(404, 'not_found', 'this operation has no result file (any more)');
};
