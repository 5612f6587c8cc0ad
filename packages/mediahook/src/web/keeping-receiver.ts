/**
 * `listen`'s receiver with the raw request kept (for replay) and, with `--forward-to`, sent on
 * to the app once accepted: the sender then gets the app's answer. Refused callbacks are
 * answered by the receiver alone, and neither kept nor forwarded.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';
import { emitWarning } from 'node:process';
import {
  createReceiver,
  type Receiver,
  type ReceiverOptions,
  type ReceiverOutcome,
} from '../receiver/index.ts';
import { jsonAnswer } from '../receiver/receiver-answer.ts';
import type { ReceiverRequest, ReceiverResponse } from '../receiver/receiver-types.ts';
import type { KeptRequest, KeptRequests } from './kept-requests.ts';
import { type SendResult, type SendTarget, sendKept } from './kept-sending.ts';

/** The app's answer to a forwarded callback, as `listen` prints it. */
export interface ForwardRecord {
  /** The app's status; null when it gave none. */
  status: number | null;
  ms: number;
  /**
   * `forward_failed` when the app could not be reached or did not answer in time;
   * `forward_loop` when the callback came back from this very `listen` and was not sent again.
   */
  code?: 'forward_failed' | 'forward_loop';
}

/** A request's outcome in `listen`: the receiver's, with what was kept and forwarded. */
export interface ListenOutcome extends ReceiverOutcome {
  /** The kept raw request's id (for replay); null when it was not kept. */
  kept: string | null;
  /** The app's answer; null when the callback was not forwarded. */
  forward: ForwardRecord | null;
}

interface KeepingOptions {
  keeper: KeptRequests;
  /** The app every accepted callback goes on to; null to keep them only. */
  forward: SendTarget | null;
}

/** One request's headers, and its outcome until the forward is done. */
interface RequestScope {
  req: IncomingMessage;
  outcome: ReceiverOutcome | null;
}

/** Content-Type and every `webhook-*` header, in the order the sender wrote them. */
function keptHeadersOf(req: IncomingMessage): [string, string][] {
  const headers: [string, string][] = [];
  for (let index = 0; index + 1 < req.rawHeaders.length; index += 2) {
    const name = req.rawHeaders[index]!.toLowerCase();
    if (name === 'content-type' || name.startsWith('webhook-'))
      headers.push([name, req.rawHeaders[index + 1]!]);
  }
  return headers;
}

/** The answer to the sender, after the app's: its 2xx is ours, anything else a 500. */
function answerAfterForward(accepted: ReceiverResponse, result: SendResult, url: URL): ReceiverResponse {
  if (result.failure) return jsonAnswer(500, { error: result.failure });
  if (result.status! >= 200 && result.status! < 300) return accepted;
  if (result.errorBody !== null) return { ...jsonAnswer(500, null), body: result.errorBody };
  return jsonAnswer(500, {
    error: { code: 'forward_refused', message: `the app at ${url.origin} answered ${result.status}` },
  });
}

/** Whether the request carries our own `Via` entry: it was forwarded by this very process. */
function cameBack(req: IncomingMessage, forward: SendTarget): boolean {
  const via = req.headers.via;
  return (
    forward.via !== undefined && via !== undefined && via.split(',').some((hop) => hop.trim() === forward.via)
  );
}

function forwardRecordOf(result: SendResult): ForwardRecord {
  return result.failure
    ? { status: null, ms: result.ms, code: result.failure.code }
    : { status: result.status, ms: result.ms };
}

/**
 * A receiver whose requests, handled `within` their Node request, are kept and forwarded
 * (`keeping`), and whose outcomes go to `tell` once the app has answered.
 */
export function keepingReceiver(
  options: Omit<ReceiverOptions, 'onOutcome'>,
  keeping: KeepingOptions | null,
  tell: (outcome: ListenOutcome) => void,
): { receiver: Receiver; within: <T>(req: IncomingMessage, run: () => T) => T } {
  const scope = new AsyncLocalStorage<RequestScope>();
  const inner = createReceiver({
    ...options,
    onOutcome(outcome) {
      const current = scope.getStore();
      if (current) current.outcome = outcome;
      else tell({ ...outcome, kept: null, forward: null });
    },
  });
  if (keeping === null) return { receiver: inner, within: (_req, run) => run() };
  const { keeper, forward } = keeping;

  async function keep(request: ReceiverRequest, current: RequestScope): Promise<ReceiverResponse> {
    const writer = keeper.begin();
    const response = await inner.handle({ ...request, body: writer.tee(request.body!) });
    const outcome = current.outcome!;
    if (outcome.verdict === 'rejected' || outcome.callback === null) {
      await writer.discard();
      tell({ ...outcome, kept: null, forward: null });
      return response;
    }
    let kept: KeptRequest;
    try {
      kept = await writer.commit({ idGen: outcome.callback.id_gen, headers: keptHeadersOf(current.req) });
    } catch (error) {
      await writer.discard();
      const message = `the request could not be kept: ${(error as Error).message}`;
      if (forward === null) {
        emitWarning(message);
        tell({ ...outcome, kept: null, forward: null });
        return response;
      }
      tell({ ...outcome, kept: null, forward: { status: null, ms: 0, code: 'forward_failed' } });
      return jsonAnswer(500, { error: { code: 'forward_failed', message } });
    }
    if (forward === null) {
      tell({ ...outcome, kept: kept.id, forward: null });
      await keeper.evict();
      return response;
    }
    if (cameBack(current.req, forward)) {
      tell({ ...outcome, kept: kept.id, forward: { status: null, ms: 0, code: 'forward_loop' } });
      const message = `this callback was forwarded here by this listen: --forward-to ${forward.url.href} leads back to it`;
      return jsonAnswer(500, { error: { code: 'forward_loop', message } });
    }
    const result = await keeper.hold(kept, () => sendKept(keeper, kept, forward));
    tell({ ...outcome, kept: kept.id, forward: forwardRecordOf(result) });
    return answerAfterForward(response, result, forward.url);
  }

  const receiver: Receiver = {
    store: inner.store,
    out: inner.out,
    close: () => inner.close(),
    async handle(request) {
      const current = scope.getStore();
      if (!current) return inner.handle(request);
      if (request.body !== null) return keep(request, current);
      const response = await inner.handle(request);
      if (current.outcome) tell({ ...current.outcome, kept: null, forward: null });
      return response;
    },
  };
  return { receiver, within: (req, run) => scope.run({ req, outcome: null }, run) };
}
