import { isAbsolute, join, resolve } from 'node:path';
import type { BlobStore } from './blob-store.ts';
import { BlobStoreError } from './blob-store-error.ts';
import { DirectoryBlobStore, type DirectoryBlobStoreOptions } from './directory-blob-store.ts';
import { PostgresBlobStore } from './postgres-blob-store.ts';
import { S3BlobStore } from './s3-blob-store.ts';

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

interface OpenBlobStoreOptions {
  /** The data directory: a directory store defaults to `DATA/results`. */
  dataDir: string;
  /** The store's `--db`: `postgres` keeps files in that database (and its `schema`). */
  db?: string | undefined;
  /** For a directory: see {@link DirectoryBlobStoreOptions}. */
  directory?: DirectoryBlobStoreOptions;
}

/**
 * The blob store a `--blobs` value names: absent, `DATA/results`; `postgres`, the store's
 * PostgreSQL database; `s3://BUCKET/PREFIX`, an S3-compatible store; anything else, a
 * directory. Errors have a stable `code`: `blobs_need_postgres`, `blobs_s3_unavailable`,
 * `blobs_invalid`.
 *
 * @example
 * const blobs = await openBlobStore('s3://mediahook/results', { dataDir: 'data' });
 */
export async function openBlobStore(
  spec: string | undefined,
  options: OpenBlobStoreOptions,
): Promise<BlobStore> {
  if (spec === undefined || spec === '') {
    return new DirectoryBlobStore(join(options.dataDir, 'results'), options.directory);
  }
  if (spec === 'postgres') {
    if (options.db === undefined || !POSTGRES_URL.test(options.db)) {
      throw new BlobStoreError(
        'blobs_need_postgres',
        "postgres keeps files in the store's database: --db must be a postgres:// URL",
      );
    }
    const url = new URL(options.db);
    const schema = url.searchParams.get('schema') ?? undefined;
    url.searchParams.delete('schema');
    return PostgresBlobStore.open({ connectionString: url.href, schema });
  }
  if (spec.startsWith('s3://')) return S3BlobStore.open(spec);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) {
    throw new BlobStoreError('blobs_invalid', `a directory, postgres or s3://BUCKET/PREFIX, not ${spec}`);
  }
  return new DirectoryBlobStore(isAbsolute(spec) ? spec : resolve(spec), options.directory);
}
