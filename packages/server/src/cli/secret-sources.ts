/**
 * Secrets and passwords from the environment or a file instead of the command line, where
 * every local user reads them (`ps`, /proc/PID/cmdline): the store (`MEDIAHOOK_DB`, and the
 * `PG*` variables PostgreSQL's client reads itself), client `default`'s signing secrets
 * (`MEDIAHOOK_SECRET`, `--secret-file`), the key that seals the others (`MEDIAHOOK_SECRET_KEY`,
 * `--secret-key-file`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { secretFlags, UsageError } from 'mediahook/internal';

/** The flags that carry these, for `parseCommandArgs`. */
export const SECRET_FLAG_OPTIONS = {
  secret: { type: 'string', multiple: true },
  'secret-file': { type: 'string' },
  'secret-key': { type: 'string' },
  'secret-key-file': { type: 'string' },
} as const;

interface SecretFlags {
  secret?: string[];
  'secret-file'?: string;
  'secret-key'?: string;
  'secret-key-file'?: string;
}

/** A file's text, trimmed; a UsageError naming the flag (never the content) if it cannot be read. */
function fileText(flag: string, path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (error) {
    throw new UsageError(
      `${flag}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
}

/** The store to open: `--db`, else `MEDIAHOOK_DB`, else the SQLite file in the data directory. */
export function storeLocationOf(db: string | undefined, dataDir: string): string {
  return db ?? (process.env['MEDIAHOOK_DB'] || undefined) ?? join(dataDir, 'mediahook.sqlite');
}

/** Whether a store was named at all (`--db` or `MEDIAHOOK_DB`). */
export function storeNamed(db: string | undefined): boolean {
  return db !== undefined || Boolean(process.env['MEDIAHOOK_DB']);
}

/**
 * Client `default`'s secrets, from one source: `--secret` (repeatable), `--secret-file` (white
 * space between several), or `MEDIAHOOK_SECRET` (the same); none: unsigned.
 */
export function defaultSecretsOf(values: SecretFlags): string[] {
  if (values.secret !== undefined && values['secret-file'] !== undefined) {
    throw new UsageError('give --secret or --secret-file, not both');
  }
  if (values.secret !== undefined) return secretFlags(values.secret);
  const text =
    values['secret-file'] !== undefined
      ? fileText('--secret-file', values['secret-file'])
      : (process.env['MEDIAHOOK_SECRET'] ?? '');
  const secrets = text.split(/\s+/).filter((word) => word !== '');
  try {
    return secretFlags(secrets);
  } catch (error) {
    // The message says what is wrong with a secret without showing it.
    const source = values['secret-file'] !== undefined ? '--secret-file' : 'MEDIAHOOK_SECRET';
    throw new UsageError((error as Error).message.replace('--secret', source));
  }
}

/** The key that seals clients' secrets: `--secret-key`, `--secret-key-file` or `MEDIAHOOK_SECRET_KEY`. */
export function secretKeyOf(values: SecretFlags): string | undefined {
  if (values['secret-key'] !== undefined && values['secret-key-file'] !== undefined) {
    throw new UsageError('give --secret-key or --secret-key-file, not both');
  }
  const text =
    values['secret-key'] ??
    (values['secret-key-file'] !== undefined
      ? fileText('--secret-key-file', values['secret-key-file'])
      : process.env['MEDIAHOOK_SECRET_KEY'] || undefined);
  if (text !== undefined && text.trim().length < 32) {
    throw new UsageError('the secret key needs at least 32 characters (e.g. openssl rand -base64 32)');
  }
  return text;
}
