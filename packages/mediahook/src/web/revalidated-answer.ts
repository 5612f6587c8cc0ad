import { createHash } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';

/**
 * Answers 200 with `text`, or 304 with no body when the client already holds it: a weak entity
 * tag of the text goes with the answer, and `If-None-Match` naming it (RFC 9110 §13.1.2) gets
 * 304 Not Modified. `Cache-Control: private, no-cache` lets a browser keep the answer and ask
 * again each time, so pages that poll (the dashboard, the inspector) move a few hundred bytes
 * when nothing changed instead of the whole list.
 *
 * @example
 * sendRevalidated(req, res, JSON.stringify(list), { 'content-type': 'application/json' });
 */
export function sendRevalidated(
  req: IncomingMessage,
  res: ServerResponse,
  text: string,
  headers: OutgoingHttpHeaders,
): void {
  const tag = `W/"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;
  const common = { ...headers, etag: tag, 'cache-control': 'private, no-cache' };
  if (matchesTag(req.headers['if-none-match'], tag)) {
    res.writeHead(304, common);
    res.end();
    return;
  }
  res.writeHead(200, { ...common, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Whether `If-None-Match` names `tag` or is `*`; compared weakly, as §13.1.2 asks. */
function matchesTag(header: string | undefined, tag: string): boolean {
  if (header === undefined) return false;
  const opaque = tag.slice(2);
  return header.split(',').some((entry) => {
    const candidate = entry.trim();
    return candidate === '*' || candidate === tag || candidate === opaque || candidate === `W/${opaque}`;
  });
}
