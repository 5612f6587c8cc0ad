/**
 * One shard of the long fuzz run, as a child process: runs {@link runFuzz} with the options
 * given as JSON in argv[2], reports progress as `progress <n>` lines and ends with one
 * `figures <json>` line on stdout.
 */
import { type FuzzOptions, runFuzz } from '../../test/support/fuzz/fuzz.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as FuzzOptions;
const figures = await runFuzz({
  ...options,
  onProgress: (done) => process.stdout.write(`progress ${done}\n`),
});
process.stdout.write(`figures ${JSON.stringify(figures)}\n`);
