/**
 * Operations whose outcome was made outside the service and handed in (`POST /v1/callbacks`):
 * recorded finished, with their callback due, in one transaction.
 */
import { firstDueAt } from './circuit.ts';
import { endpointKeyOf } from './endpoint-key.ts';
import { checkClient, checkIdGen, checkText, outcomeValues } from './operation-queries.ts';
import type { StoreDb } from './schema.ts';
import type { SubmittedOperation, WorkEvent } from './store.ts';
import { StoreError } from './store-error.ts';

/**
 * Inserts the finished operation and its pending callback; `conflict` when the id exists.
 * Its kind column says what the result is (an error counts as an image); the resource shows
 * such an operation as kind `external`.
 */
export async function insertSubmittedOperation(
  trx: StoreDb,
  op: SubmittedOperation,
  now: number,
  events: WorkEvent[],
): Promise<void> {
  checkIdGen(op.id_gen);
  checkClient(op.client);
  for (const name of ['webhook_url', 'status_text', 'time_gen'] as const) checkText(name, op[name]);
  const values = outcomeValues(op.outcome);
  const endpointKey = endpointKeyOf(op.webhook_url);
  const inserted = await trx
    .insertInto('operations')
    .values({
      id_gen: op.id_gen,
      client: op.client,
      kind: values.mediaType === 'video/mp4' ? 'video' : 'image',
      family: op.family,
      state: values.state,
      webhook_url: op.webhook_url,
      endpoint_key: endpointKey,
      prompt: '',
      status_text: op.status_text,
      created_at: now,
      finished_at: op.finished_at,
      result_key: values.resultKey,
      result_media_type: values.mediaType,
      result_bytes: values.bytes,
      error_message: values.message,
      runs: 0,
      time_gen: op.time_gen,
      submission_sha256: op.submission_sha256,
    })
    .onConflict((oc) => oc.column('id_gen').doNothing())
    .returning('id_gen')
    .executeTakeFirst();
  if (inserted === undefined) throw new StoreError('conflict', `operation ${op.id_gen} already exists`);
  await trx
    .insertInto('callbacks')
    .values({
      id_gen: op.id_gen,
      state: 'pending',
      next_attempt_at: firstDueAt(endpointKey, now),
      attempt_count: 0,
      round: 1,
      round_attempt_count: 0,
      endpoint_key: endpointKey,
      created_at: now,
    })
    .execute();
  events.push({ kind: 'callback', id_gen: op.id_gen });
}
