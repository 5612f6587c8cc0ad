import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Command } from './command.ts';

/** The package that holds the service's commands, and its entry that lists them. */
const SERVER_PACKAGE = '@mediahook/server';
const ENTRY = `${SERVER_PACKAGE}/commands`;

/** The commands `@mediahook/server` provides: `mediahook` runs them when that package is installed. */
export const SERVER_COMMAND_NAMES = ['serve', 'worker', 'keys', 'demo', 'doctor'] as const;
export type ServerCommandName = (typeof SERVER_COMMAND_NAMES)[number];

/** What `@mediahook/server/commands` exports. */
export type ServerCommandLoaders = Record<ServerCommandName, () => Promise<Command>>;

/**
 * A command that lives in a package that is not installed: `main` says which one and exits 2,
 * whatever the arguments (`--help` included).
 */
export class MissingPackageError extends Error {
  override readonly name = 'MissingPackageError';
}

/**
 * Where `@mediahook/server` is: in the working directory's node_modules (a project that
 * installed both), else beside mediahook itself (a global install, or npx of the server).
 */
function locateServer(): string | null {
  const bases = [join(process.cwd(), 'package.json'), fileURLToPath(import.meta.url)];
  for (const base of bases) {
    try {
      return createRequire(base).resolve(ENTRY);
    } catch {
      // not installed there; try the next place
    }
  }
  return null;
}

/**
 * Loads one of the service's commands from `@mediahook/server`.
 *
 * @example
 * const serve = await loadServerCommand('serve'); // MissingPackageError without the package
 */
export async function loadServerCommand(name: ServerCommandName): Promise<Command> {
  const entry = locateServer();
  if (entry === null) {
    throw new MissingPackageError(
      `'${name}' is a command of ${SERVER_PACKAGE}, which is not installed here; ` +
        `install it beside mediahook: npm install ${SERVER_PACKAGE}`,
    );
  }
  const { serverCommands } = (await import(pathToFileURL(entry).href)) as {
    serverCommands: ServerCommandLoaders;
  };
  return serverCommands[name]();
}
