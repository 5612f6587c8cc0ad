import { chmodSync, mkdirSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { dirname, relative, resolve, sep } from 'node:path';

/** Permissions of what a receiver creates: files and directories its owner alone can read. */
export interface FileModes {
  file: number;
  dir: number;
  /**
   * Set a mode given on purpose with chmod after creating: the umask (022, or 077) would otherwise
   * take back what was widened. The defaults need no chmod: a umask never widens them.
   */
  exactFile: boolean;
  exactDir: boolean;
}

const DEFAULT_FILE_MODE = 0o600;
const DEFAULT_DIR_MODE = 0o700;

/**
 * Throws a TypeError, naming `what`, unless `mode` is a permission mode (0 to 0o777) that keeps
 * the owner's own access: read and write to a file, all three to a directory.
 *
 * @example
 * checkMode(0o640, 'file', '--file-mode'); // fine
 */
export function checkMode(mode: number, kind: 'file' | 'dir', what: string): void {
  const least = kind === 'file' ? DEFAULT_FILE_MODE : DEFAULT_DIR_MODE;
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o777) {
    throw new TypeError(`${what} is a permission mode from 0 to 0o777, not ${String(mode)}`);
  }
  if ((mode & least) !== least) {
    throw new TypeError(
      `${what} 0${mode.toString(8)} takes away the owner's access (0${least.toString(8)}): it may only widen it`,
    );
  }
}

/**
 * The modes a receiver creates files and directories with: 0600 and 0700 unless widened (for
 * another process, as another user or group, that reads the files). A mode that is not one, or
 * that takes away the owner's own access, throws a TypeError.
 *
 * @example
 * fileModesOf({ fileMode: 0o640, dirMode: 0o750 }); // group may read
 */
export function fileModesOf(options: {
  fileMode?: number | undefined;
  dirMode?: number | undefined;
}): FileModes {
  if (options.fileMode !== undefined) checkMode(options.fileMode, 'file', 'fileMode');
  if (options.dirMode !== undefined) checkMode(options.dirMode, 'dir', 'dirMode');
  return {
    file: options.fileMode ?? DEFAULT_FILE_MODE,
    dir: options.dirMode ?? DEFAULT_DIR_MODE,
    exactFile: options.fileMode !== undefined,
    exactDir: options.dirMode !== undefined,
  };
}

/**
 * A mode written as on the command line: octal, `640`, `0640` or `0o640`; null when it is not.
 *
 * @example
 * parseMode('0640'); // 0o640
 */
export function parseMode(text: string): number | null {
  const match = /^(?:0o?)?([0-7]{3})$/i.exec(text.trim());
  return match ? Number.parseInt(match[1]!, 8) : null;
}

/** The directories from `first` (the first one mkdir created) down to `path`. */
function created(first: string | undefined, path: string): string[] {
  if (first === undefined) return [];
  const below = relative(first, path);
  const chain = [first];
  let current = first;
  for (const name of below === '' ? [] : below.split(sep)) {
    current = resolve(current, name);
    chain.push(current);
  }
  return chain;
}

/**
 * Makes `path` and any missing parents with the directory mode; one that exists keeps its own.
 *
 * @example
 * makeDirectorySync('/srv/callbacks', fileModesOf({}));
 */
export function makeDirectorySync(path: string, modes: FileModes): void {
  const first = mkdirSync(path, { recursive: true, mode: modes.dir });
  if (modes.exactDir) for (const dir of created(first, resolve(path))) chmodSync(dir, modes.dir);
}

/** {@link makeDirectorySync}, without blocking. */
async function makeDirectory(path: string, modes: FileModes): Promise<void> {
  const first = await mkdir(path, { recursive: true, mode: modes.dir });
  if (modes.exactDir) for (const dir of created(first, resolve(path))) await chmod(dir, modes.dir);
}

/** The directory a file goes into, made as {@link makeDirectory} makes it. */
export function makeParentDirectory(file: string, modes: FileModes): Promise<void> {
  return makeDirectory(dirname(file), modes);
}
