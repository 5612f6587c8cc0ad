import { mkdir } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { join } from 'node:path';
import {
  CallbackSender,
  DEFAULT_RETRY_POLICY,
  DeliveryWorker,
  type BlobStore,
  DirectoryBlobStore,
  type RetryPolicy,
  type SsrfPolicy,
} from '../delivery/index.ts';
import type { BodyGuardOptions } from 'mediahook/internal';
import type { Store } from '../store/index.ts';
import { createApiHandler } from './api-server.ts';
import { ClientSecrets } from './clients/client-secrets.ts';
import { GenerationWorker } from './generation-worker.ts';
import type { Generator } from './generators/index.ts';
import { jsonLogger, type Logger } from './json-log.ts';
import { RequestDrain } from './request-drain.ts';
import { ServiceMetrics } from './service-metrics.ts';

export interface ServiceOptions {
  store: Store;
  /** Generator scratch space (`work/`), and result files (`results/`) unless `blobs` is given. */
  dataDir: string;
  /**
   * Where result files are kept (see `openBlobStore`): `DATA/results` by default. Processes on
   * machines sharing no disk need one they all reach (PostgreSQL, S3). Its owner closes it.
   */
  blobs?: BlobStore | undefined;
  generator: Generator;
  /**
   * `whsec_…` secrets of client `default` (the operations made without a key or with its
   * keys): its callbacks are signed with each. Every other client has a secret of its own, made
   * on first need and kept in the store.
   */
  secrets?: readonly string[] | undefined;
  /** Seals clients' secrets in the store (AES-256-GCM); random text of 32 characters or more. */
  secretKey?: string | undefined;
  /** How long a rotated-out secret still signs beside the new one (24 h). */
  secretOverlapMs?: number | undefined;
  ssrf?: SsrfPolicy | undefined;
  retrySchedule?: readonly number[] | undefined;
  /** Generations at once (2). */
  generationConcurrency?: number | undefined;
  /** Deliveries at once (16). */
  deliveryConcurrency?: number | undefined;
  /**
   * How long a claim on work lasts: when a process dies, others take its work over once this
   * has passed. Default 10 min for deliveries (a delivery taking longer may be sent twice) and
   * 60 s for generations (renewed while they run).
   */
  leaseMs?: number | undefined;
  /**
   * Host names the API answers besides IP addresses and `localhost` (`.example.com` for a domain,
   * `*` for any): another Host is `421 host_not_allowed`, against DNS rebinding. Default none.
   */
  allowedHosts?: readonly string[] | undefined;
  /**
   * Origins whose browser pages may call the API's POST routes (and read its answers, by CORS):
   * another site's POST is `403 cross_site_request`, key or not. Default none.
   */
  allowedOrigins?: readonly string[] | undefined;
  /** Largest result file `POST /v1/callbacks` takes (1 GiB). */
  maxSubmittedFileBytes?: number | undefined;
  /**
   * How slow a hand-in's body may be: nothing for `idleTimeoutMs` (30 s), or under
   * `minBytesPerSecond` (64 KiB/s) over `rateWindowMs` (30 s), is `408 upload_too_slow`.
   */
  uploadGuards?: BodyGuardOptions | undefined;
  /**
   * How long a fault of the service's own (its database, blob store, disk, a generator that
   * cannot start) may hold an operation up, tried again meanwhile, before it fails (24 h).
   */
  faultRetryForMs?: number | undefined;
  /** Run the generation and delivery workers in this process (true). */
  workers?: boolean | undefined;
  log?: Logger | undefined;
}

export interface Service {
  /** The HTTP API and dashboard. */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  metrics: ServiceMetrics;
  blobs: BlobStore;
  /** Starts the workers (after taking over leases a previous run of this process left). */
  start(): Promise<void>;
  /** Stops the workers gracefully, then closes the sender (not the store: its owner does). */
  stop(): Promise<void>;
  /**
   * Closes a server running {@link handler}: stops accepting, lets the requests in flight end
   * (with `Connection: close`) for up to `graceMs` (5 s), then closes every connection. Resolves
   * once no request is being handled, so the store can be closed after it.
   */
  closeServer(server: Server, graceMs?: number): Promise<void>;
}

/**
 * The generation service: API, generation worker and delivery worker around one store.
 *
 * @example
 * const store = await openStore('data/mediahook.sqlite');
 * const service = createService({ store, dataDir: 'data', generator: builtInGenerator() });
 * await service.start();
 * const server = http.createServer(service.handler).listen(8080, '127.0.0.1');
 * // on SIGTERM:
 * await Promise.all([service.closeServer(server), service.stop()]);
 * await store.close();
 */
export function createService(options: ServiceOptions): Service {
  const log = options.log ?? jsonLogger();
  const metrics = new ServiceMetrics();
  // A store no other process uses has its data directory to itself; small results are read at
  // once. A shared one's is shared by every process, maybe over a network file system: reads go
  // to the pool.
  const blobs =
    options.blobs ??
    new DirectoryBlobStore(join(options.dataDir, 'results'), {
      ...(options.store.sharedByProcesses ? { blockingReadMaxBytes: 0 } : {}),
    });
  const retry: RetryPolicy = {
    ...DEFAULT_RETRY_POLICY,
    schedule: options.retrySchedule ?? DEFAULT_RETRY_POLICY.schedule,
  };
  const secrets = new ClientSecrets({
    store: options.store,
    defaultSecrets: options.secrets,
    secretKey: options.secretKey,
    overlapMs: options.secretOverlapMs,
  });
  const sender = new CallbackSender({ ssrf: options.ssrf });
  const generation = new GenerationWorker({
    store: options.store,
    blobs,
    generator: options.generator,
    workDir: join(options.dataDir, 'work'),
    concurrency: options.generationConcurrency,
    leaseMs: options.leaseMs,
    faultRetryForMs: options.faultRetryForMs,
    onFinished(event) {
      metrics.operationFinished(event.state);
      log(event.state === 'failed' ? 'warn' : 'info', 'operation_finished', event);
    },
    onDeferred: (event) => log('warn', 'operation_deferred', event),
    onError: (error) => log('error', 'generation_worker_error', { error }),
  });
  const delivery = new DeliveryWorker({
    store: options.store,
    blobs,
    sender,
    signingSecrets: (client) => secrets.signingSecrets(client),
    retry,
    concurrency: options.deliveryConcurrency,
    leaseMs: options.leaseMs,
    faultRetryForMs: options.faultRetryForMs,
    onDeferred: (event) => log('warn', 'callback_deferred', event),
    onAttempt({ id_gen, endpoint, attempt, next }) {
      metrics.attempt(next.state, attempt.duration_ms);
      log(next.state === 'delivered' ? 'info' : 'warn', 'delivery_attempt', {
        id_gen,
        endpoint,
        status_code: attempt.status_code,
        error: attempt.error,
        duration_ms: attempt.duration_ms,
        next: next.state,
      });
    },
    onError: (error) => log('error', 'delivery_worker_error', { error }),
  });
  const runWorkers = options.workers ?? true;
  const drain = new RequestDrain();
  return {
    handler: createApiHandler({
      store: options.store,
      blobs,
      metrics,
      log,
      drain,
      allowedHosts: options.allowedHosts,
      allowedOrigins: options.allowedOrigins,
      maxSubmittedFileBytes: options.maxSubmittedFileBytes,
      ssrf: options.ssrf,
      uploadGuards: options.uploadGuards,
      secrets,
    }),
    metrics,
    blobs,
    async start() {
      if (!runWorkers) return;
      // The data directory too, when missing: the owner's alone, as every file in it.
      await mkdir(join(options.dataDir, 'work'), { recursive: true, mode: 0o700 });
      await generation.start();
      await delivery.start();
    },
    async stop() {
      if (runWorkers) await Promise.all([generation.stop(), delivery.stop()]);
      await sender.close();
    },
    closeServer: (server, graceMs = 5000) => drain.close(server, graceMs),
  };
}
