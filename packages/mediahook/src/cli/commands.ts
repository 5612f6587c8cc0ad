import type { CommandEntry } from './command.ts';

/**
 * Every `mediahook` command, in the order `mediahook --help` lists them. A command's module is
 * loaded only when it runs: `send`, `check` and `listen` then start without the service's
 * database and HTTP layers, which take most of a second to load.
 */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'serve',
    summary: 'Run the generation service: API, generators, delivery, dashboard',
    load: async () => (await import('../../../server/src/cli/serve.ts')).serveCommand,
  },
  {
    name: 'worker',
    summary: 'Run generation and delivery workers only (scale-out on PostgreSQL)',
    load: async () => (await import('../../../server/src/cli/worker.ts')).workerCommand,
  },
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
    name: 'check',
    summary: 'Check that a receiver conforms: valid, repeated, malformed, badly signed callbacks',
    load: async () => (await import('./check.ts')).checkCommand,
  },
  {
    name: 'keys',
    summary: 'Create API keys for the service',
    load: async () => (await import('../../../server/src/cli/keys.ts')).keysCommand,
  },
  {
    name: 'demo',
    summary: 'Run the service and a receiver together, with three sample operations',
    load: async () => (await import('../../../server/src/cli/demo.ts')).demoCommand,
  },
];
