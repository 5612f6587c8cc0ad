/**
 * The service's commands, as `mediahook` loads them when this package is installed beside it
 * (`mediahook serve`, …), and as this package's own `mediahook-server` runs them. Each module is
 * imported only when its command runs.
 */
import type { ServerCommandLoaders } from 'mediahook/cli';

export const serverCommands: ServerCommandLoaders = {
  serve: async () => (await import('./serve.ts')).serveCommand,
  worker: async () => (await import('./worker.ts')).workerCommand,
  keys: async () => (await import('./keys.ts')).keysCommand,
  demo: async () => (await import('./demo.ts')).demoCommand,
  doctor: async () => (await import('./doctor.ts')).doctorCommand,
};
