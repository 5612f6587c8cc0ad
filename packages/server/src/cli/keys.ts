import { resolve } from 'node:path';
import { createApiKey, keyView, parseKeyLifetime } from '../service/clients/api-keys.ts';
import type { Store } from '../store/index.ts';
import { type CliIo, type Command, parseCommandArgs, UsageError } from 'mediahook/internal';
import { dbFlag } from './service-flags.ts';
import { checkBeforeStart } from './start-checks.ts';

const USAGE = `Usage: mediahook keys create --client NAME [--admin] [--expires 30d] [--label TEXT] [--json]
       mediahook keys list [--json]
       mediahook keys revoke KEY_ID
  each with [--db FILE|postgres://…] [--data DIR] (or MEDIAHOOK_DB)

Manages the service's API keys. A key belongs to a client (a name: its operations, its
signing secret) and is a client key (that client's data only) or, with --admin, an admin key
(every client's data, and keys). 'create' prints the key once: only its SHA-256 hash is
stored. Clients send it as 'Authorization: Bearer <key>'. Once a key exists, the service asks
for one on /v1 and may bind to other addresses than loopback; revoked keys count.
'list' never shows a key, only its KEY_ID; 'revoke' refuses the key from then on (every
process within a few seconds).

Options:
  --client NAME    the key's client: 1 to 64 of A-Z a-z 0-9 . _ - (default's secret is --secret)
  --admin          an admin key
  --expires DUR    refuse the key after this long (12h, 30d)
  --label TEXT     a note kept with the key
  --json           create: {"key","key_id","client","role","expires_at"}; list: {"keys":[…]}
`;

export const keysCommand: Command = {
  usage: USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseCommandArgs(argv, {
      client: { type: 'string' },
      admin: { type: 'boolean' },
      expires: { type: 'string' },
      label: { type: 'string' },
      json: { type: 'boolean' },
      db: { type: 'string' },
      data: { type: 'string' },
    });
    const [action, ...rest] = positionals;
    const expected = { create: 0, list: 0, revoke: 1 }[action ?? ''];
    if (expected === undefined) throw new UsageError("the subcommand is 'create', 'list' or 'revoke'");
    if (rest.length !== expected) {
      throw new UsageError(
        action === 'revoke' ? "'keys revoke' takes one KEY_ID" : `unexpected argument '${rest[0]}'`,
      );
    }
    if (
      action !== 'create' &&
      (values.client ?? values.admin ?? values.expires ?? values.label) !== undefined
    ) {
      throw new UsageError('--client, --admin, --expires and --label go with create');
    }
    let expiresInMs: number | undefined;
    if (action === 'create') {
      if (values.client === undefined) throw new UsageError('--client NAME is required');
      try {
        expiresInMs = values.expires === undefined ? undefined : parseKeyLifetime(values.expires);
      } catch (error) {
        throw new UsageError(`--expires: ${(error as Error).message}`);
      }
    }
    const dataDir = resolve(values.data ?? 'data');
    const { db, given } = dbFlag(values.db, dataDir);
    const checked = await checkBeforeStart(
      { db, dbGiven: given, dataDir, blobs: undefined, generatorProgram: undefined },
      ['database'],
      io,
    );
    if (checked === null) return 1;
    const { store } = checked;
    try {
      if (action === 'list') return await list(store, io, values.json === true);
      if (action === 'revoke') {
        const record = await store.revokeApiKey(rest[0]!);
        io.stderr.write(`mediahook keys: ${record.key_id} of client ${record.client} is revoked\n`);
        return 0;
      }
      const { created } = await createApiKey(store, {
        client: values.client!,
        role: values.admin === true ? 'admin' : 'client',
        expiresInMs,
        label: values.label,
      });
      io.stdout.write(values.json === true ? `${JSON.stringify(created)}\n` : `${created.key}\n`);
      io.stderr.write(
        `mediahook keys: created ${created.key_id} (${created.role === 'admin' ? 'an admin key' : 'a client key'} of ${created.client}); the key is shown only this once\n`,
      );
      return 0;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'not_found' || code === 'invalid_argument') {
        io.stderr.write(`mediahook keys: ${(error as Error).message}\n`);
        return 1;
      }
      throw error;
    } finally {
      await store.close();
    }
  },
};

async function list(store: Store, io: CliIo, json: boolean): Promise<number> {
  const keys = (await store.listApiKeys()).map(keyView);
  if (json) {
    io.stdout.write(`${JSON.stringify({ keys })}\n`);
    return 0;
  }
  for (const key of keys) {
    const state = key.revoked_at
      ? `revoked ${key.revoked_at}`
      : key.expires_at
        ? `expires ${key.expires_at}`
        : 'active';
    io.stdout.write(
      `${key.key_id}  ${key.client}  ${key.role}  created ${key.created_at}  ${state}  last used ${key.last_used_at ?? 'never'}\n`,
    );
  }
  return 0;
}
