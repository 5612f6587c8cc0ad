import type { CommandEntry } from './command.ts';
import { serverCommand } from './server-commands.ts';

/**
 * Every `mediahook` command, in the order `mediahook --help` lists them. A command's module is
 * loaded only when it runs: `send`, `check` and `listen` start without anything else, and the
 * service's commands come from `@mediahook/server`, looked up only when one is asked for.
 */
export const COMMANDS: readonly CommandEntry[] = [
  serverCommand('serve'),
  serverCommand('worker'),
  {
    name: 'listen',
    summary: 'Receive callbacks: validate, verify, store, print; inspector at /',
    load: async () => (await import('./listen.ts')).listenCommand,
  },
  {
    name: 'send',
    summary: 'Send one callback (a file or an error text) to a URL and print the answer',
    load: async () => (await import('./send.ts')).sendCommand,
  },
  {
    name: 'replay',
    summary: 'Send callbacks that listen kept to a URL again, byte-exact',
    load: async () => (await import('./replay.ts')).replayCommand,
  },
  {
    name: 'check',
    summary: 'Check that a receiver conforms: valid, repeated, malformed, badly signed callbacks',
    load: async () => (await import('./check.ts')).checkCommand,
  },
  serverCommand('keys'),
  serverCommand('demo'),
  serverCommand('doctor'),
];
