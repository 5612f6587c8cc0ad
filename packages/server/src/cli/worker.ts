import { createService } from '../service/service.ts';
import { type CliIo, type Command, parseCommandArgs, untilSignal, UsageError } from 'mediahook/internal';
import { storeNamed } from './secret-sources.ts';
import { SERVICE_FLAG_OPTIONS, SERVICE_FLAG_USAGE, serviceOptionsOf, serviceSetup } from './service-flags.ts';

const USAGE = `Usage: mediahook worker --db postgres://… [options]

Runs generation and delivery only, no API: start several on one PostgreSQL database next to
\`mediahook serve --no-worker\` processes to scale out. Result files must be reachable by
every process: --blobs postgres or --blobs s3://… (or one --data directory on a shared file
system).

Options:
${SERVICE_FLAG_USAGE.replace(/^ {2}--db .*$/m, '  --db FILE|postgres://…  the store (required; or MEDIAHOOK_DB): PostgreSQL to scale out, or a SQLite file')}`;

export const workerCommand: Command = {
  usage: USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseCommandArgs(argv, SERVICE_FLAG_OPTIONS);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    if (!storeNamed(values.db))
      throw new UsageError('--db (or MEDIAHOOK_DB) is required (a postgres:// URL, or a SQLite file)');
    const setup = await serviceSetup(values, io);
    if (setup === null) return 1;
    const service = createService(serviceOptionsOf(setup));
    const stopped = untilSignal();
    await service.start();
    io.stderr.write(
      `mediahook worker: running on ${setup.store.dialect} (data in ${setup.dataDir}, results in ${setup.blobs.location})\n`,
    );
    const signal = await stopped;
    io.stderr.write(`mediahook worker: ${signal}, stopping\n`);
    await service.stop();
    await setup.store.close();
    await setup.blobs.close();
    return 0;
  },
};
