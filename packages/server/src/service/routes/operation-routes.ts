/** The handlers of `/v1/operations`: start, list, read, redeliver, and the result file. */
import { FAMILIES, uuidv7 } from 'mediahook/protocol';
import type { OperationList } from '../../client/api-types.ts';
import { CALLBACK_STATES, OPERATION_STATES } from '../../store/index.ts';
import { ApiError } from '../api-error.ts';
import { oneOf, queryParam, readJson, sendData, sendJson, textParam } from '../api-exchange.ts';
import { sendBlobAnswer } from '../blob-answer.ts';
import { parseCreateOperation } from '../request-validation.ts';
import type { RouteHandler } from './route.ts';

export const createOperation: RouteHandler = async ({ req, res }, { store, metrics, log }) => {
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
};

export const listOperations: RouteHandler = async ({ res, url }, { store }) => {
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
  sendData(res, { operations, next_before: last } satisfies OperationList);
};

export const getOperation: RouteHandler = async ({ res, params }, { store }) => {
  const operation = await store.getOperation(params['id_gen']!);
  if (!operation) throw new ApiError(404, 'not_found', `no operation ${params['id_gen']}`);
  sendData(res, operation);
};

export const redeliver: RouteHandler = async ({ res, params }, { store, log }) => {
  const id = params['id_gen']!;
  await store.redeliver(id);
  log('info', 'callback_redelivered', { id_gen: id });
  sendJson(res, 202, await store.getOperation(id));
};

export const getResult: RouteHandler = async ({ res, params }, { store, blobs }) => {
  const record = await store.getOperationRecord(params['id_gen']!);
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
