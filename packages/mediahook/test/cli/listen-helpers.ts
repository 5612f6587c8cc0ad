/** `mediahook listen` as a user runs it, for the listen suites: started, fed callbacks, stopped. */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { request } from 'undici';
import { BodySigner, encodeCallback, type OutgoingCallback } from '../../src/protocol/index.ts';
import { BIN } from './helpers.ts';

export interface Listener {
  url: string;
  child: ChildProcessWithoutNullStreams;
  lines: string[];
  stderr: () => string;
  /** Resolves once `count` stdout lines have arrived. */
  waitForLines(count: number): Promise<string[]>;
  stop(): Promise<number | null>;
}

/** `bin/mediahook listen` on a free port, as a user runs it; resolves once it is ready. */
export async function startListen(args: string[]): Promise<Listener> {
  const child = spawn(BIN, ['listen', '--port', '0', ...args], { stdio: 'pipe' });
  const lines: string[] = [];
  let stderr = '';
  let pending = '';
  const waiters: (() => void)[] = [];
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    pending += text;
    const complete = pending.split('\n');
    pending = complete.pop() ?? '';
    lines.push(...complete);
    for (const wake of waiters.splice(0)) wake();
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
      const match = /receiving at (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.on('exit', (code) => reject(new Error(`listen exited ${code}: ${stderr}`)));
  });
  return {
    url,
    child,
    lines,
    stderr: () => stderr,
    async waitForLines(count) {
      while (lines.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
      return lines;
    },
    stop() {
      return new Promise((resolve) => {
        child.on('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      });
    },
  };
}

/**
 * Sends a callback as the service encodes it (signed with `secret`, with `extra` headers such as
 * a Host or an Origin); the status, JSON body and answer headers.
 */
export async function post(
  url: string,
  callback: OutgoingCallback,
  secret?: string,
  extra: Record<string, string> = {},
) {
  const encoded = await encodeCallback(callback);
  const chunks: Buffer[] = [];
  for await (const chunk of encoded.body()) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  const headers: Record<string, string> = { 'content-type': encoded.contentType };
  if (secret) {
    const signer = new BodySigner(secret, callback.id_gen);
    signer.update(body);
    Object.assign(headers, signer.headers());
  }
  const response = await request(url, { method: 'POST', headers: { ...headers, ...extra }, body });
  return {
    status: response.statusCode,
    body: (await response.body.json()) as Record<string, any>,
    headers: response.headers,
  };
}
