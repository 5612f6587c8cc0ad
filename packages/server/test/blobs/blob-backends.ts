/**
 * The three blob stores the suites run on, each test with a place of its own: a fresh
 * directory, a fresh PostgreSQL schema, or a fresh prefix in a bucket of a real S3 server.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  type BlobStore,
  DirectoryBlobStore,
  PostgresBlobStore,
  S3BlobStore,
} from '../../src/delivery/index.ts';
import { POSTGRES_URL, probePostgres } from '../store/backends.ts';
import { S3_BUCKET, S3_CREDENTIALS, type S3Server, startS3Server } from './s3-server.ts';

export interface BlobBackend {
  blobs: BlobStore;
  dispose(): Promise<void>;
}

interface BlobBackendKind {
  name: 'directory' | 'postgres' | 's3';
  create(): Promise<BlobBackend>;
}

const directory: BlobBackendKind = {
  name: 'directory',
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'mediahook-blobs-'));
    return {
      blobs: new DirectoryBlobStore(join(dir, 'results')),
      async dispose() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const postgres: BlobBackendKind = {
  name: 'postgres',
  async create() {
    const schema = `blob_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const blobs = await PostgresBlobStore.open({ connectionString: POSTGRES_URL, schema });
    return {
      blobs,
      async dispose() {
        await blobs.close();
        const admin = new pg.Client({ connectionString: POSTGRES_URL });
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await admin.end();
      },
    };
  },
};

let s3Server: S3Server | undefined;

/** The suite's S3 server, started by the first test that needs it. */
async function sharedS3Server(): Promise<S3Server> {
  s3Server ??= await startS3Server();
  return s3Server;
}

export async function closeSharedS3Server(): Promise<void> {
  await s3Server?.close();
  s3Server = undefined;
}

const s3: BlobBackendKind = {
  name: 's3',
  async create() {
    const server = await sharedS3Server();
    const prefix = `run-${randomBytes(6).toString('hex')}`;
    const blobs = await S3BlobStore.open(`s3://${S3_BUCKET}/${prefix}`, {
      endpoint: server.endpoint,
      credentials: S3_CREDENTIALS,
    });
    return { blobs, dispose: () => blobs.close() };
  },
};

/**
 * The blob stores to test: PostgreSQL is left out (with a warning) when unreachable, except
 * with CI=true, where its absence fails the suite.
 */
export async function blobBackends(suite: string): Promise<BlobBackendKind[]> {
  const problem = await probePostgres();
  if (!problem) return [directory, postgres, s3];
  if (process.env.CI === 'true') throw new Error(`${suite}: PostgreSQL is required when CI=true: ${problem}`);
  console.warn(`${suite}: PostgreSQL blob store SKIPPED (${problem})`);
  return [directory, s3];
}
