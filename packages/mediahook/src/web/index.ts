/// <reference types="node" preserve="true" />
/**
 * What mediahook's pages and HTTP answers are made of, shared by `listen`'s inspector and the
 * service's dashboard in `@mediahook/server`: page security headers, the text-display helpers,
 * revalidated JSON answers, file answers with ranges, the request target, the Host and
 * Origin checks that keep a browser's pages out, the receiver's guards against a request body
 * that stalls or trickles, and the `node:http` internals they rely on.
 *
 * @example
 * import { pageHeaders, sendRevalidated } from 'mediahook/web';
 */
export { sendFileAnswer } from './file-response.ts';
export { pageHeaders, type PageSources } from './page-headers.ts';
export { TEXT_SCRIPT, TEXT_STYLE } from './page-text.ts';
export { requestTargetOf } from './request-target.ts';
export { sendRevalidated } from './revalidated-answer.ts';
export {
  type AllowedHosts,
  allowedHostsOf,
  hostAllowed,
  hostHint,
  hostNotAllowedMessage,
  oncePerHost,
} from '../receiver/host-check.ts';
export { allowedOriginsOf, originAllowed, originOf } from '../receiver/origin-check.ts';
export { allowHalfOpen, answerOwedOn } from '../receiver/adapters/node-internals.ts';
export { type BodyGuardOptions, bodyGuardsOf, failableBody } from '../receiver/adapters/body-guards.ts';
export { watchBody } from '../receiver/adapters/node-http.ts';
