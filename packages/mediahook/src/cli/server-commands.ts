import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Command, CommandEntry } from './command.ts';

/** The package that holds the service's commands, and its entry that describes them. */
const SERVER_PACKAGE = '@mediahook/server';
const ENTRY = `${SERVER_PACKAGE}/commands`;

/**
 * The names of the commands `@mediahook/server` provides: all `mediahook` knows of them, so that
 * it can say which package to install. Their summaries, usage and code are that package's.
 */
const SERVER_COMMAND_NAMES = ['serve', 'worker', 'keys', 'demo', 'doctor'] as const;
type ServerCommandName = (typeof SERVER_COMMAND_NAMES)[number];

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

/** The commands the installed `@mediahook/server` describes, or null when it is not installed. */
async function installedServerCommands(): Promise<readonly CommandEntry[] | null> {
  const entry = locateServer();
  if (entry === null) return null;
  const { serverCommands } = (await import(pathToFileURL(entry).href)) as {
    serverCommands: readonly CommandEntry[];
  };
  return serverCommands;
}

async function loadServerCommand(name: ServerCommandName): Promise<Command> {
  const provided = (await installedServerCommands())?.find((entry) => entry.name === name);
  if (provided === undefined) {
    throw new MissingPackageError(
      `'${name}' is a command of ${SERVER_PACKAGE}, which is not installed here; ` +
        `install it beside mediahook: npm install ${SERVER_PACKAGE}`,
    );
  }
  return provided.load();
}

/** Stand-ins for the service's commands, each loading the installed server's on use. */
const STAND_INS = new Map<string, CommandEntry>(
  SERVER_COMMAND_NAMES.map((name) => [
    name,
    {
      name,
      summary: `(needs ${SERVER_PACKAGE}: npm install ${SERVER_PACKAGE})`,
      load: () => loadServerCommand(name),
    },
  ]),
);

/** The stand-in of one of the service's commands, for `mediahook`'s command list. */
export function serverCommand(name: ServerCommandName): CommandEntry {
  return STAND_INS.get(name) as CommandEntry;
}

const isStandIn = (entry: CommandEntry): boolean => STAND_INS.get(entry.name) === entry;

/**
 * The commands as `mediahook --help` lists them: a stand-in takes the installed server's own
 * summary, and keeps saying which package it needs when that is not installed.
 */
export async function describedCommands(commands: readonly CommandEntry[]): Promise<readonly CommandEntry[]> {
  if (!commands.some(isStandIn)) return commands;
  const provided = await installedServerCommands().catch(() => null);
  return commands.map((entry) =>
    isStandIn(entry) ? (provided?.find((own) => own.name === entry.name) ?? entry) : entry,
  );
}
