import { checkCommand } from './check.ts';
import type { Command } from './command.ts';
import { demoCommand } from './demo.ts';
import { keysCommand } from './keys.ts';
import { listenCommand } from './listen.ts';
import { sendCommand } from './send.ts';
import { serveCommand } from './serve.ts';
import { workerCommand } from './worker.ts';

/** Every `mediahook` command, in the order `mediahook --help` lists them. */
export const COMMANDS: readonly Command[] = [
  serveCommand,
  workerCommand,
  listenCommand,
  sendCommand,
  checkCommand,
  keysCommand,
  demoCommand,
];
