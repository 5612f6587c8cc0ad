/**
 * The inspector's Replay button: `POST /.mediahook/replay/<id>` sends a kept request again to
 * the `--forward-to` app, and only there (no target comes from the request: it cannot be made
 * to reach another address). Only the inspector's own page may ask: a page of another site is
 * refused, so that it cannot have callbacks sent in the user's name.
 */
import type { IncomingMessage } from 'node:http';
import { originOf } from '../receiver/index.ts';
import type { KeptRequests } from './kept-requests.ts';
import { type SendTarget, sendKept } from './kept-sending.ts';

/** The paths of `listen`'s own POST routes: a callback is never posted there. */
export const OWN_PREFIX = '/.mediahook/';

const REPLAY_PREFIX = `${OWN_PREFIX}replay/`;

/** The kept request's id when `path` is the replay route's; else null. */
export function replayIdOf(path: string): string | null {
  const id = path.startsWith(REPLAY_PREFIX) ? path.slice(REPLAY_PREFIX.length) : '';
  return /^[^/]+$/.test(id) ? id : null;
}

/** The inspector's path to replay a kept request. */
export function replayPathOf(id: string): string {
  return `${REPLAY_PREFIX}${id}`;
}

type Answer = (status: number, body: unknown) => void;

/** Why a request is not from the inspector's own page: another site's, as the browser says. */
function crossSiteProblem(req: IncomingMessage): string | null {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    return `the browser marks this request as ${site} (Sec-Fetch-Site)`;
  }
  const origin = req.headers.origin;
  if (origin === undefined) return null;
  const read = originOf(origin);
  if (read === null || new URL(read).host !== req.headers.host?.toLowerCase()) {
    return `a page of ${JSON.stringify(origin.slice(0, 200))} sent it`;
  }
  return null;
}

/** Answers the replay of kept request `id` (the Host was checked before). */
export async function replayRoute(
  req: IncomingMessage,
  id: string,
  kept: KeptRequests | null,
  target: SendTarget | undefined,
  answer: Answer,
): Promise<void> {
  req.resume(); // a body, if any, is not used
  const problem = crossSiteProblem(req);
  if (problem) {
    return answer(403, {
      error: { code: 'cross_site_request', message: `replay is for the inspector's own page: ${problem}` },
    });
  }
  if (!kept || !target) {
    return answer(409, {
      error: {
        code: 'no_forward_target',
        message: 'replay sends to the app of --forward-to, and none is set',
      },
    });
  }
  const request = await kept.get(id);
  if (!request) {
    return answer(404, {
      error: { code: 'not_found', message: `no kept request ${id} (evicted, or never kept)` },
    });
  }
  const result = await kept.hold(request, () => sendKept(kept, request, target));
  if (result.failure) return answer(502, { error: result.failure });
  return answer(200, { replayed: id, forward: { status: result.status, ms: result.ms } });
}
