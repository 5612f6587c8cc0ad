/**
 * A real S3 server (s3rver) on loopback, on a free port, with one bucket, for the tests that
 * keep result files in S3.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

export const S3_BUCKET = 'mediahook-test';
/** The credentials s3rver accepts. */
export const S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface S3Server {
  endpoint: string;
  /** The `AWS_*` variables a spawned process finds the server with. */
  env: Record<string, string>;
  /** Parts of multipart uploads the server holds now (uploads begun and not completed). */
  partsStored(): Promise<number>;
  /** Stops answering, its connections cut, its objects kept: an outage. */
  stop(): Promise<void>;
  /** Answers again on the same port, with the same objects. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startS3Server(): Promise<S3Server> {
  const directory = await mkdtemp(join(tmpdir(), 'mediahook-s3-'));
  const serve = async (port: number) => {
    const server = new S3rver({
      address: '127.0.0.1',
      port,
      silent: true,
      directory,
      configureBuckets: [{ name: S3_BUCKET }],
    });
    const address = await server.run();
    return { server, port: address.port };
  };
  const first = await serve(0);
  const port = first.port;
  let server = first.server;
  let running = true;
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    env: {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
    },
    async partsStored() {
      const entries = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => []);
      return entries.filter((e) => e.isFile() && /^\d+$/.test(e.name) && /uploads/.test(e.parentPath)).length;
    },
    async stop() {
      if (!running) return;
      running = false;
      const closing = server.close();
      // Keep-alive connections the clients hold would keep it answering: cut them too.
      (server as unknown as { httpServer: { closeAllConnections(): void } }).httpServer.closeAllConnections();
      await closing;
    },
    async start() {
      if (running) return;
      ({ server } = await serve(port));
      running = true;
    },
    async close() {
      if (running) await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
