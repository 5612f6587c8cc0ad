/**
 * The service's commands, described here (name, summary, loader): `mediahook` lists and runs
 * them when this package is installed beside it (`mediahook serve`, …), and this package's own
 * `mediahook-server` runs them. Each module is imported only when its command runs.
 */
import type { CommandEntry } from 'mediahook/internal';

export const serverCommands: readonly CommandEntry[] = [
  {
    name: 'serve',
    summary: 'Run the generation service: API, generators, delivery, dashboard',
    load: async () => (await import('./serve.ts')).serveCommand,
  },
  {
    name: 'worker',
    summary: 'Run generation and delivery workers only (scale-out on PostgreSQL)',
    load: async () => (await import('./worker.ts')).workerCommand,
  },
  {
    name: 'keys',
    summary: "Create, list and revoke the service's API keys",
    load: async () => (await import('./keys.ts')).keysCommand,
  },
  {
    name: 'demo',
    summary: 'Run the service and a receiver together, with three sample operations',
    load: async () => (await import('./demo.ts')).demoCommand,
  },
  {
    name: 'doctor',
    summary: "Check the service's database, blob store and generator, as serve does at start",
    load: async () => (await import('./doctor.ts')).doctorCommand,
  },
];
