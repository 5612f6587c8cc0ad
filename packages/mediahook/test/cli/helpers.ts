import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import busboy from 'busboy';

/** The command as a user runs it from a clone. */
export const BIN = fileURLToPath(new URL('../../../../bin/mediahook', import.meta.url));

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface RunOptions {
  /** Pipes closed at once, before the command writes, as `| true` does to stdout. */
  closed?: ('stdout' | 'stderr')[];
  /** Variables added to this process's environment. */
  env?: Record<string, string>;
  /** Runs as this user and group (this process being root). */
  user?: { uid: number; gid: number };
}

/** Runs `bin/mediahook` as a child process (through its shebang) and collects its output. */
export function runCli(args: string[], options: RunOptions = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, ...options.env };
    const child = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], env, ...options.user });
    for (const name of options.closed ?? []) child[name].destroy();
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** One part as busboy saw it, plus the raw header lines the sender wrote for it. */
export interface SeenPart {
  name: string;
  kind: 'field' | 'file';
  /** Text of a field; for a file, its bytes as latin1 (tests compare lengths and heads). */
  value: string;
  bytes: number;
  filename?: string | undefined;
  mimeType?: string;
  rawHeaders: string[];
}

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  parts: SeenPart[];
}

export interface Receiver {
  url: string;
  requests: SeenRequest[];
  /** What the next requests are answered with. */
  answer: { status: number; body: string; contentType?: string; headers?: Record<string, string> };
  close(): Promise<void>;
}

/** Header lines of each part, read straight from the bytes: busboy hides a missing Content-Type. */
function rawPartHeaders(body: Buffer, boundary: string): string[][] {
  const text = body.toString('latin1');
  return text
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((section) => {
      const end = section.indexOf('\r\n\r\n');
      return section.slice(2, end).split('\r\n');
    });
}

/**
 * A plain busboy receiver on 127.0.0.1, port chosen by the system: it keeps every request's
 * bytes and parts and answers with `answer`.
 */
export async function startReceiver(): Promise<Receiver> {
  const requests: SeenRequest[] = [];
  const receiver: Receiver = {
    url: '',
    requests,
    answer: { status: 200, body: 'accepted' },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const parts: Omit<SeenPart, 'rawHeaders'>[] = [];
    const parser = busboy({ headers: req.headers, preservePath: true });
    parser.on('field', (name, value, info) => {
      parts.push({ name, kind: 'field', value, bytes: Buffer.byteLength(value), mimeType: info.mimeType });
    });
    parser.on('file', (name, stream, info) => {
      const fileChunks: Buffer[] = [];
      const part: Omit<SeenPart, 'rawHeaders'> = {
        name,
        kind: 'file',
        value: '',
        bytes: 0,
        filename: info.filename,
        mimeType: info.mimeType,
      };
      parts.push(part);
      stream.on('data', (chunk: Buffer) => fileChunks.push(chunk));
      stream.on('end', () => {
        const bytes = Buffer.concat(fileChunks);
        part.bytes = bytes.length;
        part.value = bytes.toString('latin1');
      });
    });
    parser.on('close', () => {
      const body = Buffer.concat(chunks);
      const boundary = /boundary=([^;]+)/.exec(req.headers['content-type'] ?? '')?.[1] ?? '';
      const raw = rawPartHeaders(body, boundary);
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        parts: parts.map((part, index) => ({ ...part, rawHeaders: raw[index] ?? [] })),
      });
      const { status, body: answer, contentType, headers } = receiver.answer;
      res.writeHead(status, { 'content-type': contentType ?? 'text/plain; charset=utf-8', ...headers });
      res.end(answer);
    });
    parser.on('error', (error: Error) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`receiver could not parse the body: ${error.message}`);
    });
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.pipe(parser);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}

/**
 * Runs `command` and collects its output; one still running after `limitMs` is killed and
 * fails the caller, naming the command (for commands that must exit by themselves).
 */
export async function runToExit(
  command: string,
  args: string[],
  options: { cwd?: string | undefined; env?: NodeJS.ProcessEnv | undefined; limitMs: number },
): Promise<CliRun> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const limit = setTimeout(() => child.kill('SIGKILL'), options.limitMs);
  const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
  clearTimeout(limit);
  if (signal === 'SIGKILL') throw new Error(`${args.join(' ')} did not exit: ${stderr}`);
  return { code, stdout, stderr };
}

/** A loopback port nobody listens on (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Bytes a sniffer takes for a JPEG: the SOI marker and an APP0 segment start, then filler. */
export function jpegBytes(size: number): Buffer {
  const bytes = Buffer.alloc(size, 0x5a);
  Buffer.from([0xff, 0xd8, 0xff, 0xe0]).copy(bytes);
  return bytes;
}

/** Bytes a sniffer takes for an MP4: a box size, then `ftyp` at offset 4, then filler. */
export function mp4Bytes(size: number): Buffer {
  const bytes = Buffer.alloc(size, 0x11);
  Buffer.from([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d]).copy(bytes);
  return bytes;
}
