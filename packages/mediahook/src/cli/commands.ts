import type { CommandEntry } from './command.ts';
import { loadServerCommand, type ServerCommandName } from './server-commands.ts';

const SUMMARIES: Record<ServerCommandName | 'listen' | 'send' | 'check' | 'replay', string> = {
  serve: 'Run the generation service: API, generators, delivery, dashboard',
  worker: 'Run generation and delivery workers only (scale-out on PostgreSQL)',
  listen: 'Receive callbacks: validate, verify, store, print; inspector at /',
  send: 'Send one callback (a file or an error text) to a URL and print the answer',
  replay: 'Send callbacks that listen kept to a URL again, byte-exact',
  check: 'Check that a receiver conforms: valid, repeated, malformed, badly signed callbacks',
  keys: 'Create API keys for the service',
  demo: 'Run the service and a receiver together, with three sample operations',
  doctor: "Check the service's database, blob store and generator, as serve does at start",
};

const server = (name: ServerCommandName): CommandEntry => ({
  name,
  summary: `${SUMMARIES[name]} (@mediahook/server)`,
  load: () => loadServerCommand(name),
});

/**
 * Every `mediahook` command, in the order `mediahook --help` lists them. A command's module is
 * loaded only when it runs: `send`, `check` and `listen` start without anything else, and the
 * service's commands come from `@mediahook/server`, looked up only when one is asked for.
 */
export const COMMANDS: readonly CommandEntry[] = [
  server('serve'),
  server('worker'),
  {
    name: 'listen',
    summary: SUMMARIES.listen,
    load: async () => (await import('./listen.ts')).listenCommand,
  },
  {
    name: 'send',
    summary: SUMMARIES.send,
    load: async () => (await import('./send.ts')).sendCommand,
  },
  {
    name: 'replay',
    summary: SUMMARIES.replay,
    load: async () => (await import('./replay.ts')).replayCommand,
  },
  {
    name: 'check',
    summary: SUMMARIES.check,
    load: async () => (await import('./check.ts')).checkCommand,
  },
  server('keys'),
  server('demo'),
  server('doctor'),
];
