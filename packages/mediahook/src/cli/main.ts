import { version } from '../protocol/version.ts';
import { type CliIo, type CommandEntry, processIo, UsageError } from './command.ts';
import { COMMANDS } from './commands.ts';
import { describedCommands, MissingPackageError } from './server-commands.ts';

async function mainUsage(listed: readonly CommandEntry[]): Promise<string> {
  const commands = await describedCommands(listed);
  const width = Math.max(...commands.map((command) => command.name.length));
  const lines = commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`);
  return [
    'Usage: mediahook <command> [options]',
    '',
    'Result callbacks of an image/video generation service: send, receive, check.',
    '',
    'Commands:',
    ...lines,
    '',
    'Options:',
    '  --help, -h   show this help; `mediahook <command> --help` shows a command’s options',
    '  --version    print the version',
    '',
  ].join('\n');
}

function wantsHelp(argv: readonly string[]): boolean {
  // Only flags before a `--` terminator count: after it, `--help` is an argument.
  for (const arg of argv) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

function usageFailure(io: CliIo, prefix: string, message: string, helpHint: string): number {
  io.stderr.write(`${prefix}: ${message}\nRun '${helpHint}' for usage.\n`);
  return 2;
}

/**
 * Runs the command line: dispatches to a command, answers `--help` and `--version`, and turns
 * failures into exit codes (2 for wrong usage, 1 for anything else a command throws). Never
 * throws and never calls `process.exit`, so pending output is written out in full; output to
 * a closed pipe is dropped without changing the exit code.
 *
 * @example
 * process.exitCode = await main(process.argv.slice(2));
 */
export async function main(
  argv: string[],
  io: CliIo = processIo(),
  commands: readonly CommandEntry[] = COMMANDS,
): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) {
    io.stderr.write(await mainUsage(commands));
    return 2;
  }
  if (first === '--help' || first === '-h') {
    io.stdout.write(await mainUsage(commands));
    return 0;
  }
  if (first === '--version') {
    io.stdout.write(`${version()}\n`);
    return 0;
  }
  if (first === 'help') {
    const topic = rest[0];
    if (topic === undefined) {
      io.stdout.write(await mainUsage(commands));
      return 0;
    }
    const command = commands.find((candidate) => candidate.name === topic);
    if (!command) return usageFailure(io, 'mediahook', `unknown command '${topic}'`, 'mediahook --help');
    try {
      io.stdout.write((await command.load()).usage);
      return 0;
    } catch (error) {
      io.stderr.write(`mediahook help: ${error instanceof Error ? error.message : String(error)}\n`);
      return error instanceof MissingPackageError ? 2 : 1;
    }
  }
  if (first.startsWith('-')) {
    return usageFailure(io, 'mediahook', `unknown option '${first}' before the command`, 'mediahook --help');
  }
  const command = commands.find((candidate) => candidate.name === first);
  if (!command) {
    const names = commands.map((candidate) => candidate.name).join(', ');
    return usageFailure(
      io,
      'mediahook',
      `unknown command '${first}' (commands: ${names})`,
      'mediahook --help',
    );
  }
  try {
    const loaded = await command.load();
    if (wantsHelp(rest)) {
      io.stdout.write(loaded.usage);
      return 0;
    }
    return await loaded.run(rest, io);
  } catch (error) {
    const prefix = `mediahook ${command.name}`;
    if (error instanceof UsageError) {
      return usageFailure(io, prefix, error.message, `mediahook ${command.name} --help`);
    }
    io.stderr.write(`${prefix}: ${error instanceof Error ? error.message : String(error)}\n`);
    return error instanceof MissingPackageError ? 2 : 1;
  }
}
