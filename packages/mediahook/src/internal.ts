/// <reference types="node" preserve="true" />
/**
 * For `@mediahook/server` only, with no semver promise: the pieces of mediahook's command line
 * and pages that the service's commands, API and dashboard are built from. An application
 * imports from `mediahook`, `mediahook/protocol` and the adapters instead.
 */
export {
  allowedHostFlags,
  allowOriginFlags,
  type CliIo,
  type Command,
  type CommandEntry,
  durationFlag,
  escapeControls,
  parseCommandArgs,
  portFlag,
  secretFlags,
  sizeFlag,
  UsageError,
} from './cli/command.ts';
export { COMMANDS } from './cli/commands.ts';
export { parseDuration, parseDurationList } from './cli/duration.ts';
export { main } from './cli/main.ts';
export { untilSignal } from './cli/signals.ts';
export { isTlsErrorCode } from './cli/tls-error.ts';
export { allowHalfOpen, answerOwedOn } from './receiver/adapters/node-internals.ts';
export { type BodyGuardOptions, bodyGuardsOf, failableBody } from './receiver/adapters/body-guards.ts';
export { watchBody } from './receiver/adapters/node-http.ts';
export {
  allowedHostsOf,
  hostAllowed,
  hostHint,
  hostNotAllowedMessage,
  oncePerHost,
} from './receiver/host-check.ts';
export { allowedOriginsOf, originAllowed, originOf } from './receiver/origin-check.ts';
export { pageHeaders } from './web/page-headers.ts';
export { TEXT_SCRIPT, TEXT_STYLE } from './web/page-text.ts';
export { requestTargetOf } from './web/request-target.ts';
export { sendRevalidated } from './web/revalidated-answer.ts';
export { listenLineOf } from './web/listen-record.ts';
export { createListenServer } from './web/listen-server.ts';
