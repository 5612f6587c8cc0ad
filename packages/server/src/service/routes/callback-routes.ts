/** The handler of `POST /v1/callbacks`: an outcome made elsewhere, handed in to be delivered. */
import { readMultipartSubmission } from '../submission/multipart-submission.ts';
import { submitCallback as submit } from '../submission/submit-callback.ts';
import { sendJson } from '../api-exchange.ts';
import type { RouteHandler } from './route.ts';

export const submitCallback: RouteHandler = async (
  { req, res, caller },
  { store, blobs, log, maxSubmittedFileBytes },
) => {
  const { created, operation } = await readMultipartSubmission(req, (input) =>
    submit(store, blobs, input, { maxFileBytes: maxSubmittedFileBytes, client: caller.client }),
  );
  if (created) log('info', 'callback_submitted', { id_gen: operation.id_gen, state: operation.state });
  sendJson(res, created ? 202 : 200, operation);
};
