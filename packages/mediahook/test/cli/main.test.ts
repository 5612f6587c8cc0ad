import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CliIo, type Command, type CommandEntry, UsageError } from '../../src/cli/command.ts';
import { main } from '../../src/cli/main.ts';
import { BIN, runCli } from './helpers.ts';

const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

function memoryIo(): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (chunk: string) => (out += chunk) },
    stderr: { write: (chunk: string) => (err += chunk) },
    out: () => out,
    err: () => err,
  };
}

const probeCommand: Command = {
  usage: 'Usage: mediahook probe [--fail usage|error]\n',
  async run(argv, io) {
    if (argv[0] === 'usage') throw new UsageError('bad probe');
    if (argv[0] === 'error') throw new Error('probe broke');
    io.stdout.write(`ran ${argv.join(' ')}\n`);
    return 0;
  },
};
const probe: CommandEntry = { name: 'probe', summary: 'a command for tests', load: async () => probeCommand };

describe('bin/mediahook', () => {
  it('prints the version from package.json', async () => {
    const run = await runCli(['--version']);
    expect(run).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it('lists the commands with --help', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: mediahook <command>/);
    expect(run.stdout).toMatch(/^ {2}send {2}/m);
  });

  it('shows a command’s help with <command> --help and with help <command>', async () => {
    const run = await runCli(['send', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: mediahook send URL --family A\|B/);
    expect((await runCli(['help', 'send'])).stdout).toBe(run.stdout);
  });

  it('exits 2 on an unknown command, an unknown global option and no command', async () => {
    const unknown = await runCli(['sned']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'sned'");
    const option = await runCli(['--verbose']);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain("unknown option '--verbose'");
    const none = await runCli([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Usage: mediahook');
  });

  it('drops output to a closed pipe without a trace, keeping the exit code', async () => {
    expect(await runCli(['--help'], { closed: ['stdout'] })).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(await runCli([], { closed: ['stderr'] })).toEqual({ code: 2, stdout: '', stderr: '' });
  });

  it('works through a symlink, from another directory with its own tsconfig.json', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mediahook-bin-'));
    try {
      const link = join(dir, 'mediahook');
      await symlink(BIN, link);
      await writeFile(join(dir, 'tsconfig.json'), '{"compilerOptions":{"useDefineForClassFields":false}}');
      const child = spawn(link, ['--version'], { cwd: dir });
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (text: string) => {
        stdout += text;
      });
      const code = await new Promise((resolve) => child.on('close', resolve));
      expect(code).toBe(0);
      expect(stdout).toBe(`${pkg.version}\n`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('main', () => {
  it('dispatches to a registered command with the rest of the arguments', async () => {
    const io = memoryIo();
    expect(await main(['probe', 'a', 'b'], io, [probe])).toBe(0);
    expect(io.out()).toBe('ran a b\n');
  });

  it('answers --help anywhere before --, and passes --help after it', async () => {
    const io = memoryIo();
    expect(await main(['probe', 'x', '-h'], io, [probe])).toBe(0);
    expect(io.out()).toBe(probeCommand.usage);
    const after = memoryIo();
    expect(await main(['probe', '--', '--help'], after, [probe])).toBe(0);
    expect(after.out()).toBe('ran -- --help\n');
  });

  it('turns a UsageError into exit 2 and any other error into exit 1', async () => {
    const usage = memoryIo();
    expect(await main(['probe', 'usage'], usage, [probe])).toBe(2);
    expect(usage.err()).toBe("mediahook probe: bad probe\nRun 'mediahook probe --help' for usage.\n");
    const failure = memoryIo();
    expect(await main(['probe', 'error'], failure, [probe])).toBe(1);
    expect(failure.err()).toBe('mediahook probe: probe broke\n');
  });

  it('turns a command that cannot load into exit 1, for running it and for its help', async () => {
    const broken: CommandEntry = {
      name: 'broken',
      summary: 'a command whose module fails to load',
      load: () => Promise.reject(new Error('cannot load the native module')),
    };
    const run = memoryIo();
    expect(await main(['broken', 'x'], run, [broken])).toBe(1);
    expect(run.err()).toBe('mediahook broken: cannot load the native module\n');
    const help = memoryIo();
    expect(await main(['help', 'broken'], help, [broken])).toBe(1);
    expect(help.err()).toBe('mediahook help: cannot load the native module\n');
  });

  it('exits 2 on help for an unknown command', async () => {
    const io = memoryIo();
    expect(await main(['help', 'nope'], io, [probe])).toBe(2);
    expect(io.err()).toContain("unknown command 'nope'");
  });
});

describe('the server commands’ flags', () => {
  // Each is refused before anything listens, opens a store or writes a file.
  it.each([
    ['serve', '--port', '0x10'],
    ['serve', '--port', '1e3'],
    ['serve', '--port='],
    ['serve', '--secret', 'whsec_abc'],
    ['serve', '--allow-url', '10.0.0.1/8'],
    ['worker', '--db', 'postgres://127.0.0.1/test', '--secret', 'whsec_abc'],
    ['listen', '--port', '65536'],
    ['demo', '--port', 'abc'],
    ['demo', '--receiver-port', '99999'],
  ])('%s %s %s: exit 2 with the flag named', async (...argv) => {
    const io = memoryIo();
    const data = await mkdtemp(join(tmpdir(), 'mediahook-flags-'));
    try {
      const where = argv[0] === 'listen' ? ['--out', data] : ['--data', data];
      expect(await main([...argv, ...where], io)).toBe(2);
      const flag = argv
        .filter((a) => a.startsWith('--'))
        .at(-1)!
        .replace(/=$/, '');
      expect(io.err()).toContain(flag);
    } finally {
      await rm(data, { recursive: true, force: true });
    }
  });
});
