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
  close(): Promise<void>;
}

export async function startS3Server(): Promise<S3Server> {
  const directory = await mkdtemp(join(tmpdir(), 'mediahook-s3-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: S3_BUCKET }],
  });
  const { port } = await server.run();
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
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
