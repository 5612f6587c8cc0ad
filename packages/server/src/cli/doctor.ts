import { type CliIo, type Command, parseCommandArgs, UsageError } from 'mediahook/internal';
import { SERVE_FLAG_OPTIONS } from './serve.ts';
import { servicePlan } from './service-flags.ts';
import { closeOpened, runChecks } from './start-checks.ts';

const USAGE = `Usage: mediahook doctor [the options of mediahook serve]

Runs the checks \`serve\`, \`worker\` and \`demo\` run before they start, all of them, and prints a
row each: the database answers and is migrated, the blob store writes, reads back and removes
a file, the generator's program runs (ffmpeg, or --generator-command's). Exit 0 when every
check passes, 1 otherwise. Give it the flags you run \`mediahook serve\` with.
`;

export const doctorCommand: Command = {
  usage: USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseCommandArgs(argv, SERVE_FLAG_OPTIONS);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const { checks } = servicePlan(values, io);
    const run = await runChecks(checks, ['database', 'blobs', 'generator'], { keepGoing: true });
    await closeOpened(run);
    const width = Math.max(...run.results.map((result) => result.name.length));
    for (const result of run.results) {
      const verdict = result.ok ? 'ok  ' : 'FAIL';
      const hint = result.hint === undefined ? '' : ` (${result.hint})`;
      io.stdout.write(`${verdict}  ${result.name.padEnd(width)}  ${result.detail}${hint}\n`);
    }
    return run.results.every((result) => result.ok) ? 0 : 1;
  },
};
