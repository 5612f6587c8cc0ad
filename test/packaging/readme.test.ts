/**
 * Every command block of the READMEs the tarballs ship (mediahook's, which is the repository's,
 * and @mediahook/server's) run in order, as a new user would, in a fresh directory where the
 * packed packages are installed, each checked for what its text says it does. A command that
 * keeps running (`serve`, `listen`, `demo`, a receiving app) is started in the background and
 * stopped when its section ends, as a user stops it to go on; ports the text names (8080, 9000)
 * are swapped for free ones. A command this file does not know fails the test: a new block
 * needs its check here.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFile, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { jpegBytes, mp4Bytes } from '../../packages/mediahook/test/receiver/helpers.ts';
import { closedPort } from '../../packages/mediahook/test/cli/helpers.ts';
import { installedProject } from './packed.ts';

const INSTALL = 10 * 60_000;
/** How long a step may wait for what its text promises before the test fails, naming it. */
const STEP_LIMIT_MS = 90_000;

/** Throws, naming `what`, once `deadline` has passed. */
function notAfter(deadline: number, what: string): void {
  if (Date.now() > deadline) throw new Error(`${what} did not happen within ${STEP_LIMIT_MS / 1000} s`);
}

/** The README's sections only a clone of the repository runs (`npm test` and the like). */
const CLONE_ONLY_SECTIONS = new Set(['Development']);

interface Block {
  section: string;
  lang: string;
  text: string;
}

/** The fenced code blocks of a README, with the `##` section each is in. */
function blocksOf(markdown: string): Block[] {
  const blocks: Block[] = [];
  let section = '';
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('## ')) section = line.slice(3).trim();
    const fence = /^```(\w*)$/.exec(line);
    if (!fence) continue;
    const end = lines.indexOf('```', i + 1);
    blocks.push({ section, lang: fence[1]!, text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

/** The commands of a shell block: one per line, a line ending in `\` going on to the next. */
function commandsOf(text: string): string[] {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** Until a TCP connection to the port is accepted. */
async function untilAccepting(port: number): Promise<void> {
  const deadline = Date.now() + STEP_LIMIT_MS;
  for (;;) {
    notAfter(deadline, `a connection to port ${port}`);
    const socket = connect(port, '127.0.0.1');
    // `once` rejects on the socket's 'error': refused, not listening yet.
    const accepted = await once(socket, 'connect').then(
      () => true,
      () => false,
    );
    socket.destroy();
    if (accepted) return;
    await sleep(100);
  }
}

interface Background {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
}

/** A user's directory going through one README: its terminals, files and ports. */
class Reader {
  readonly background: Background[] = [];
  ports: Record<string, number> = {};

  constructor(readonly dir: string) {}

  /** The text with the README's ports swapped for this run's. */
  swapPorts(text: string): string {
    return text.replace(/\b(8080|9000)\b/g, (port) => String(this.ports[port]));
  }

  /** Runs a command to its end through the shell, as typed. */
  async run(command: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn('bash', ['-c', this.swapPorts(command)], { cwd: this.dir, env: userEnv() });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const [code] = (await once(child, 'close')) as [number | null];
    return { code, stdout, stderr };
  }

  /** Starts a command that keeps running, until its stderr matches `ready`. */
  async start(argv: string[], ready: RegExp): Promise<Background> {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: this.dir, env: userEnv(), detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const started = { child, stdout: () => stdout, stderr: () => stderr };
    this.background.push(started);
    const deadline = Date.now() + STEP_LIMIT_MS;
    for (;;) {
      notAfter(deadline, `${argv.join(' ')} printing ${ready}`);
      if (ready.test(stderr)) return started;
      if (child.exitCode !== null) throw new Error(`${argv.join(' ')} exited: ${stderr}`);
      await sleep(100);
    }
  }

  /** Ctrl-C to everything still running: a user moving on to the next section. */
  async stopAll(): Promise<void> {
    for (const { child } of this.background.splice(0)) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = once(child, 'exit');
      process.kill(-child.pid!, 'SIGINT');
      const hard = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 15_000);
      await exited;
      clearTimeout(hard);
    }
  }

  /** `npm install <packages>`: the packed tarballs, installed by npm into a project like this one. */
  async install(packages: string[]): Promise<void> {
    const kind = packages.includes('@mediahook/server') ? 'operator' : 'receiver';
    expect(packages.sort()).toEqual(kind === 'operator' ? ['@mediahook/server', 'mediahook'] : ['mediahook']);
    const project = await installedProject(kind);
    await rm(join(this.dir, 'node_modules'), { force: true });
    await symlink(join(project, 'node_modules'), join(this.dir, 'node_modules'));
    await copyFile(join(project, 'package.json'), join(this.dir, 'package.json'));
  }

  /** The files in `./callbacks` that are not the receiver's bookkeeping. */
  async received(): Promise<string[]> {
    const names = await readdir(join(this.dir, 'callbacks')).catch(() => [] as string[]);
    return names.filter((name) => !name.startsWith('.')).sort();
  }

  /** Until `./callbacks` holds `name`. */
  async untilReceived(name: string): Promise<void> {
    const deadline = Date.now() + STEP_LIMIT_MS;
    while (!(await this.received()).includes(name)) {
      notAfter(deadline, `${name} arriving in ./callbacks`);
      await sleep(200);
    }
  }
}

/** This process's environment without any AWS setting: a new user's machine. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('AWS_')) env[name] = value;
  return { ...env, AWS_EC2_METADATA_DISABLED: 'true' };
}

/** What a shell command is for, how to run it and what must hold after it. */
async function runCommand(reader: Reader, command: string): Promise<void> {
  const words = command.replace(/\s+#.*$/, '').split(/\s+/);
  const [tool, subcommand] = [words[0], words[0] === 'npx' ? words[2] : words[1]];
  if (tool === 'npm' && subcommand === 'install') return reader.install(words.slice(2));
  if (tool === 'npx' && words[1] === 'mediahook') {
    const argv = ['bash', '-c', `exec ${reader.swapPorts(command)}`];
    if (subcommand === 'serve') {
      const started = await reader.start(argv, /listening at (http:\/\/\S+)\//);
      const url = /listening at (http:\/\/\S+)\//.exec(started.stderr())![1]!;
      expect(url).toBe(reader.swapPorts('http://127.0.0.1:8080'));
      for (const path of ['/healthz', '/readyz', '/'])
        expect((await fetch(`${url}${path}`)).status).toBe(200);
      return;
    }
    if (subcommand === 'listen') {
      await reader.start(argv, /receiving at http:\/\//);
      return;
    }
    if (subcommand === 'demo') {
      await reader.start(argv, /All three callbacks arrived/);
      return;
    }
    if (subcommand === 'send') {
      // The file the text sends is the user's own: a JPEG or an MP4 of theirs.
      const file = words[words.indexOf('--file') + 1]!;
      await writeFile(join(reader.dir, file), file.endsWith('.mp4') ? mp4Bytes(8192) : jpegBytes(4096));
      const before = await reader.received();
      const sent = await reader.run(command);
      expect(sent.code, sent.stderr).toBe(0);
      expect(sent.stdout).toContain('200');
      const after = await reader.received();
      expect(after.filter((name) => !before.includes(name))).toEqual([
        expect.stringMatching(file.endsWith('.mp4') ? /\.mp4$/ : /\.jpg$/),
      ]);
      return;
    }
    if (subcommand === 'check') {
      const checked = await reader.run(command);
      expect(checked.code, checked.stdout + checked.stderr).toBe(0);
      expect(checked.stdout).toMatch(/0 failed: the receiver conforms/);
      return;
    }
  }
  if (tool === 'curl' && command.includes('/v1/operations')) {
    const created = await reader.run(command);
    expect(created.code, created.stderr).toBe(0);
    const operation = JSON.parse(created.stdout) as { id_gen: string; state: string; kind: string };
    expect(operation).toMatchObject({ state: 'queued', kind: 'image' });
    // The text: the callback arrives at the receiver and the JPEG is kept as <id_gen>.jpg.
    await reader.untilReceived(`${operation.id_gen}.jpg`);
    return;
  }
  throw new Error(`a README command this test does not know: ${command}`);
}

/** A JavaScript block: an app the text runs with node, kept running. */
async function runScript(reader: Reader, block: Block): Promise<void> {
  const file = join(reader.dir, 'app.mjs');
  await writeFile(file, reader.swapPorts(block.text));
  if (block.text.includes('createReceiver(')) {
    // The receiving app: it listens on the README's port until stopped.
    await reader.start(['node', file], /$/);
    await untilAccepting(reader.ports['9000']!);
    return;
  }
  if (block.text.includes('createService(')) {
    await reader.start(['node', file], /$/);
    await untilAccepting(reader.ports['8080']!);
    const health = await fetch(`http://127.0.0.1:${reader.ports['8080']}/healthz`);
    expect(health.status).toBe(200);
    return;
  }
  if (block.text.includes('createClient(')) {
    // The client calls a service the reader runs at 8080. Its webhook is an address outside
    // this machine, which a test may not dial: the service runs without its workers.
    const port = reader.ports['8080']!;
    await reader.start(
      ['bash', '-c', `exec npx mediahook serve --no-worker --port ${port} --data ./client-data`],
      /listening at/,
    );
    const ran = await reader.run(`node ${file}`);
    expect(ran, ran.stderr).toMatchObject({ code: 0, stdout: 'pending\n' });
    return;
  }
  throw new Error(`a README code block this test does not know:\n${block.text}`);
}

async function readmeRun(readme: string): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'mediahook-readme-'));
  const reader = new Reader(dir);
  reader.ports = { '8080': await closedPort(), '9000': await closedPort() };
  const ran: string[] = [];
  let section = '';
  try {
    for (const block of blocksOf(readme)) {
      if (CLONE_ONLY_SECTIONS.has(block.section)) continue;
      if (block.section !== section) await reader.stopAll();
      section = block.section;
      if (block.lang === 'sh') {
        for (const command of commandsOf(block.text)) {
          await runCommand(reader, command);
          ran.push(command.replace(/\s+#.*$/, ''));
        }
      } else if (['js', 'ts'].includes(block.lang)) {
        await runScript(reader, block);
        ran.push(`(${block.lang} block of ${block.section})`);
      }
    }
  } finally {
    await reader.stopAll();
    await rm(dir, { recursive: true, force: true });
  }
  return ran;
}

describe('the READMEs, run as written from the packed tarballs', () => {
  // Some of what each README runs, so that a README whose blocks went missing does not pass.
  it.each([
    [
      "mediahook's (the repository's)",
      'mediahook',
      [
        'npm install mediahook',
        '(js block of Receive a callback)',
        'npx mediahook listen --port 9000 --out ./callbacks --json',
        'npx mediahook demo',
      ],
    ],
    [
      "@mediahook/server's",
      '@mediahook/server',
      [
        'npm install mediahook @mediahook/server',
        'npx mediahook serve --port 8080 --data ./data --allow-private-urls',
        'npx mediahook listen --port 9000 --out ./callbacks',
        '(ts block of In your own process)',
        '(ts block of Typed client)',
      ],
    ],
  ])('%s README', { timeout: INSTALL }, async (_name, pkg, expected) => {
    const project = await installedProject('operator');
    const readme = await readFile(join(project, 'node_modules', pkg, 'README.md'), 'utf8');
    expect(await readmeRun(readme)).toEqual(expect.arrayContaining(expected));
  });
});
