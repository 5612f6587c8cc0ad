/**
 * A running service and a real receiver, both on 127.0.0.1, for end-to-end tests: the API is
 * driven over HTTP, callbacks arrive at a mediahook receiver that validates and stores them.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BodyGuardOptions } from 'mediahook/internal';
import { request } from 'undici';
import type { BlobStore, SsrfPolicy } from '../../src/delivery/index.ts';
import { createApiServer } from '../../src/service/api-http-server.ts';
import { builtInGenerator, type Generator } from '../../src/service/generators/index.ts';
import { type Logger, silentLogger } from '../../src/service/json-log.ts';
import { apiKeyHash } from '../../src/service/clients/api-keys.ts';
import { createService, type Service } from '../../src/service/service.ts';
import { ALL_CLIENTS, type OperationResource, openStore, type Store } from '../../src/store/index.ts';
import { BIN } from '../../../mediahook/test/cli/helpers.ts';
import { listen } from '../../../mediahook/test/web/listen-harness.ts';

export {
  listen,
  type Receiving,
  startReceiving,
  startTempReceiving,
  type TempReceiving,
} from '../../../mediahook/test/web/listen-harness.ts';

/** Records `key` as an admin key of client `default`: a key the test knows before it asks. */
export async function addAdminKey(store: Store, key: string): Promise<void> {
  await store.addApiKey({
    client: 'default',
    role: 'admin',
    hash: apiKeyHash(key),
    prefix: key.slice(0, 7),
    label: null,
    created_at: Date.now(),
  });
}

export const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** An answer of the API: `body` is the parsed JSON, or null when `text` is not JSON. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

export interface RunningService {
  url: string;
  store: Store;
  service: Service;
  dir: string;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Answer>;
  get(path: string, headers?: Record<string, string>): Promise<Answer>;
  /** Any method; a string body goes as it is, anything else as JSON. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  stop(): Promise<void>;
}

/**
 * The service on a SQLite store in a fresh directory, callbacks signed with {@link SECRET}, private
 * webhook addresses allowed unless `ssrf` says otherwise.
 */
export async function startService(
  options: {
    db?: string;
    workers?: boolean;
    ssrf?: SsrfPolicy;
    generator?: Generator;
    allowedHosts?: string[];
    allowedOrigins?: string[];
    log?: Logger;
    maxSubmittedFileBytes?: number;
    blobs?: BlobStore;
    faultRetryForMs?: number;
    uploadGuards?: BodyGuardOptions;
    secretOverlapMs?: number;
    secretKey?: string;
  } = {},
): Promise<RunningService> {
  const dir = await mkdtemp(join(tmpdir(), 'mediahook-service-'));
  const store = openStore(options.db ?? join(dir, 'mediahook.sqlite'));
  await store.migrate();
  const service = createService({
    store,
    dataDir: dir,
    generator: options.generator ?? builtInGenerator(),
    secrets: [SECRET],
    ssrf: options.ssrf ?? { allowPrivate: true },
    retrySchedule: [200, 200, 200],
    workers: options.workers,
    allowedHosts: options.allowedHosts,
    allowedOrigins: options.allowedOrigins,
    maxSubmittedFileBytes: options.maxSubmittedFileBytes,
    blobs: options.blobs,
    faultRetryForMs: options.faultRetryForMs,
    uploadGuards: options.uploadGuards,
    secretOverlapMs: options.secretOverlapMs,
    secretKey: options.secretKey,
    log: options.log ?? silentLogger,
  });
  await service.start();
  const server = createApiServer(service.handler);
  const url = await listen(server);
  async function call(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer> {
    const response = await request(`${url}${path}`, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      ...(body === undefined
        ? {}
        : { body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body) }),
    });
    const text = await response.body.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON (a dashboard page, metrics text): `text` has it.
    }
    return { status: response.statusCode, headers: response.headers, body: parsed as any, text };
  }
  return {
    url,
    store,
    service,
    dir,
    post: (path, body, headers) => call('POST', path, body, headers),
    get: (path, headers) => call('GET', path, undefined, headers),
    call,
    async stop() {
      server.closeAllConnections();
      server.close();
      await service.stop();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Waits until the operation's callback reaches one of `states`. */
export async function waitForCallback(
  run: RunningService,
  id: string,
  states: readonly string[],
  timeoutMs = 60_000,
): Promise<OperationResource> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const operation = await run.store.getOperation(ALL_CLIENTS, id);
    if (operation && states.includes(operation.callback.state)) return operation;
    if (Date.now() > deadline)
      throw new Error(`callback of ${id} is ${operation?.callback.state}, not ${states}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface ServeProcess {
  child: ChildProcessWithoutNullStreams;
  url: string;
  /** What it has written to stderr so far. */
  stderr(): string;
  /** What it has written to stdout so far: its NDJSON log. */
  stdout(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** `bin/mediahook serve` as a user runs it, on a free loopback port; resolves once it listens. */
export async function startServeProcess(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<ServeProcess> {
  return startBinProcess(['serve', '--port', '0', ...args], /listening at (http:\/\/\S+)/, env);
}

/** `bin/mediahook worker` as a user runs it; resolves once it runs (`url` is empty). */
export function startWorkerProcess(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<ServeProcess> {
  return startBinProcess(['worker', ...args], /running on \w+()/, env);
}

/** A command of `bin/mediahook`, once its stderr matches `ready` (whose group 1 is the URL). */
async function startBinProcess(
  args: readonly string[],
  ready: RegExp,
  env: Record<string, string>,
): Promise<ServeProcess> {
  const child = spawn(BIN, args, { stdio: 'pipe', env: { ...process.env, ...env } });
  let stderr = '';
  let stdout = '';
  // Read as it comes: a pipe nobody drains would block the process once its buffer is full.
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
      const match = ready.exec(stderr);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`${args[0]} exited ${code}: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr, stdout: () => stdout, exited };
}
