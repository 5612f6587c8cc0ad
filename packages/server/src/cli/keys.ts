import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { apiKeyHash } from '../service/api-server.ts';
import { openStore } from '../store/index.ts';
import { type CliIo, type Command, parseCommandArgs, UsageError } from 'mediahook/internal';

const USAGE = `Usage: mediahook keys create [--label TEXT] [--db FILE|postgres://…] [--data DIR]

Creates an API key for the service and prints it once: only its SHA-256 hash is stored.
Clients send it as 'Authorization: Bearer <key>'. Once a key exists, the service asks for one
on /v1 and may bind to other addresses than loopback.
`;

export const keysCommand: Command = {
  usage: USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseCommandArgs(argv, {
      label: { type: 'string' },
      db: { type: 'string' },
      data: { type: 'string' },
    });
    if (positionals[0] !== 'create' || positionals.length > 1)
      throw new UsageError("the subcommand is 'create'");
    const store = openStore(values.db ?? join(resolve(values.data ?? 'data'), 'mediahook.sqlite'));
    try {
      await store.migrate();
      const key = `mh_${randomBytes(32).toString('base64url')}`;
      await store.addApiKey({
        hash: apiKeyHash(key),
        prefix: key.slice(0, 7),
        label: values.label ?? null,
        created_at: Date.now(),
      });
      io.stdout.write(`${key}\n`);
      io.stderr.write('mediahook keys: created; it is shown only this once\n');
      return 0;
    } finally {
      await store.close();
    }
  },
};
