/**
 * Receiving result callbacks in a Next.js (App Router) route handler. Copy this file to
 * `app/callbacks/route.ts`; callbacks then go
 * to POST https://your-app/callbacks and result files land in ./callbacks (relative to where
 * the server runs). WEBHOOK_SECRET may hold one or more `whsec_…` secrets, separated by spaces.
 *
 * Next.js reads the exports of a route module: only `POST` and route settings are exported.
 */
import { createReceiver, webHandler } from 'mediahook';

// Receipts and files live on disk: this route needs the Node.js runtime, not Edge.
export const runtime = 'nodejs';
// Every callback is handled; nothing here may be cached or pre-rendered.
export const dynamic = 'force-dynamic';

let handler: ((request: Request) => Promise<Response>) | undefined;

/** Made on the first callback, not on import, so `next build` starts no receipt store. */
function callbackHandler(): (request: Request) => Promise<Response> {
  const secrets = process.env['WEBHOOK_SECRET']?.split(/\s+/).filter(Boolean) ?? [];
  handler ??= webHandler(
    createReceiver({
      out: './callbacks',
      secret: secrets.length > 0 ? secrets : undefined,
      onSuccess: (callback) =>
        console.error(
          `${callback.id_gen}: ${callback.file.mediaType}, ${callback.file.bytes} bytes → ${callback.file.path}`,
        ),
      onError: (callback) => console.error(`${callback.id_gen}: failed: ${callback.message}`),
    }),
  );
  return handler;
}

export function POST(request: Request): Promise<Response> {
  return callbackHandler()(request);
}
