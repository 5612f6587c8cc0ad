/// <reference types="node" preserve="true" />
/**
 * The command line as a library: `main` runs `mediahook`, and the pieces its commands are
 * made of (argument parsing, flags, safe printing, the `listen` server) build more of them,
 * as `@mediahook/server` does for `serve`, `worker`, `keys` and `demo`.
 *
 * @example
 * import { main } from 'mediahook/cli';
 * process.exitCode = await main(process.argv.slice(2));
 */
export {
  allowedHostFlags,
  allowOriginFlags,
  type CliIo,
  type Command,
  type CommandEntry,
  durationFlag,
  escapeControls,
  jsonLine,
  type OutputStream,
  parseCommandArgs,
  portFlag,
  processIo,
  secretFlags,
  sizeFlag,
  UsageError,
} from './command.ts';
export { COMMANDS } from './commands.ts';
export { type DurationLimits, formatDuration, parseDuration, parseDurationList } from './duration.ts';
export { main } from './main.ts';
export { untilSignal } from './signals.ts';
export { isTlsErrorCode } from './tls-error.ts';
export { listenLineOf, type ListenRecord, listenRecordOf } from '../web/listen-record.ts';
export { createListenServer, type ListenServer, type ListenServerOptions } from '../web/listen-server.ts';
