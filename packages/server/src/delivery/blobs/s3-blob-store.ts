import { Readable } from 'node:stream';
import type * as S3Module from '@aws-sdk/client-s3';
import type * as StorageModule from '@aws-sdk/lib-storage';
import { BLOB_KEY, type BlobBytes, checkBlobKey, type OpenedBlob, RemoteBlobStore } from './blob-store.ts';
import { BlobStoreError } from './blob-store-error.ts';

type S3Sdk = typeof S3Module;
type StorageSdk = typeof StorageModule;

/** Parts of a multipart upload: S3's 5 MiB minimum is too small for 1 GiB in 10,000 parts. */
const PART_BYTES = 8 * 1024 * 1024;

/**
 * The SDK's own switch for its notice that its future releases will need a newer Node.js: on
 * the Node.js versions mediahook supports, that notice is nothing a user of the service can act
 * on, so it is kept off unless the variable is set already.
 */
const NODE_VERSION_WARNING_SWITCH = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

/** The SDK's packages, loaded only when an s3:// store is asked for: they are optional. */
async function loadSdk(): Promise<{ s3: S3Sdk; storage: StorageSdk }> {
  process.env[NODE_VERSION_WARNING_SWITCH] ??= 'true';
  try {
    const [s3, storage] = await Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')]);
    return { s3, storage };
  } catch (error) {
    throw new BlobStoreError(
      'blobs_s3_unavailable',
      `s3:// needs the optional packages @aws-sdk/client-s3 and @aws-sdk/lib-storage: npm install them (${(error as Error).message})`,
    );
  }
}

/** Where in S3 the files go: `s3://BUCKET/PREFIX`. */
function parseS3Location(url: string): { bucket: string; prefix: string } {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
  if (!match) throw new BlobStoreError('blobs_invalid', `not an s3://BUCKET/PREFIX location: ${url}`);
  const path = (match[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (path.split('/').some((part) => part === '.' || part === '..')) {
    throw new BlobStoreError('blobs_invalid', `the prefix of ${url} has . or .. in it`);
  }
  return { bucket: match[1]!, prefix: path === '' ? '' : `${path}/` };
}

interface S3BlobStoreOptions {
  /** Used instead of `AWS_ENDPOINT_URL` (`AWS_ENDPOINT_URL_S3`); path-style addressing then. */
  endpoint?: string;
  /** Used instead of `AWS_REGION`; `us-east-1` when neither is set but an endpoint is. */
  region?: string;
  /** Used instead of the SDK's credential chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/**
 * Result files kept in an S3-compatible object store. Credentials, region and endpoint come
 * from the AWS SDK's own chain (`AWS_*` variables, profiles, instance roles); with an endpoint
 * (MinIO, Ceph, another cloud's S3), buckets are addressed by path. Large files go up as
 * multipart uploads, 8 MiB parts two at a time, and come down streamed.
 *
 * @example
 * // AWS_ENDPOINT_URL=http://minio:9000 AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=…
 * const blobs = await S3BlobStore.open('s3://mediahook/results');
 */
export class S3BlobStore extends RemoteBlobStore {
  readonly location: string;
  readonly #sdk: { s3: S3Sdk; storage: StorageSdk };
  readonly #client: InstanceType<S3Sdk['S3Client']>;
  readonly #bucket: string;
  readonly #prefix: string;

  private constructor(url: string, sdk: { s3: S3Sdk; storage: StorageSdk }, options: S3BlobStoreOptions) {
    super();
    const { bucket, prefix } = parseS3Location(url);
    this.location = `s3://${bucket}/${prefix}`;
    this.#sdk = sdk;
    this.#bucket = bucket;
    this.#prefix = prefix;
    const endpoint =
      options.endpoint ?? process.env['AWS_ENDPOINT_URL_S3'] ?? process.env['AWS_ENDPOINT_URL'];
    const region = options.region ?? process.env['AWS_REGION'] ?? process.env['AWS_DEFAULT_REGION'];
    this.#client = new sdk.s3.S3Client({
      ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
      ...(region ? { region } : endpoint ? { region: 'us-east-1' } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
      // Checksums only where S3 demands them: other S3-compatible stores reject the newer ones.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  /** Loads the SDK (`blobs_s3_unavailable` when it is not installed) and makes the client. */
  static async open(url: string, options: S3BlobStoreOptions = {}): Promise<S3BlobStore> {
    parseS3Location(url);
    return new S3BlobStore(url, await loadSdk(), options);
  }

  async put(key: string, bytes: BlobBytes, signal?: AbortSignal): Promise<number> {
    let total = 0;
    const counted = Readable.from(
      (async function* () {
        for await (const chunk of bytes) {
          total += chunk.byteLength;
          yield chunk;
        }
      })(),
      { objectMode: false },
    );
    const upload = new this.#sdk.storage.Upload({
      client: this.#client,
      params: { Bucket: this.#bucket, Key: this.#objectOf(key), Body: counted },
      partSize: PART_BYTES,
      queueSize: 2,
      leavePartsOnError: false,
    });
    const abort = () => void upload.abort().catch(() => {});
    signal?.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
    } finally {
      signal?.removeEventListener('abort', abort);
    }
    return total;
  }

  async open(key: string): Promise<OpenedBlob | null> {
    const object = this.#objectOf(key);
    try {
      const answer = await this.#client.send(
        new this.#sdk.s3.GetObjectCommand({ Bucket: this.#bucket, Key: object }),
      );
      return { stream: answer.Body as Readable, size: answer.ContentLength ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async size(key: string): Promise<number | null> {
    return (await this.#head(key))?.ContentLength ?? null;
  }

  async modifiedAt(key: string): Promise<number | null> {
    const head = await this.#head(key);
    return head ? (head.LastModified?.getTime() ?? 0) : null;
  }

  /**
   * Aborts the multipart uploads under the prefix begun before `before`: a writer that died
   * mid-upload leaves its parts, which the store keeps (and bills) until they are aborted.
   */
  async abortUploads(before: number): Promise<number> {
    let aborted = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      const page = await this.#client.send(
        new this.#sdk.s3.ListMultipartUploadsCommand({
          Bucket: this.#bucket,
          Prefix: this.#prefix,
          ...(keyMarker ? { KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker } : {}),
        }),
      );
      for (const upload of page.Uploads ?? []) {
        if (!upload.Key || !upload.UploadId || (upload.Initiated?.getTime() ?? 0) >= before) continue;
        await this.#client.send(
          new this.#sdk.s3.AbortMultipartUploadCommand({
            Bucket: this.#bucket,
            Key: upload.Key,
            UploadId: upload.UploadId,
          }),
        );
        aborted++;
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      uploadIdMarker = page.NextUploadIdMarker;
    } while (keyMarker);
    return aborted;
  }

  async #head(key: string) {
    const object = this.#objectOf(key);
    try {
      return await this.#client.send(
        new this.#sdk.s3.HeadObjectCommand({ Bucket: this.#bucket, Key: object }),
      );
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async remove(key: string): Promise<void> {
    const object = this.#objectOf(key);
    await this.#client.send(new this.#sdk.s3.DeleteObjectCommand({ Bucket: this.#bucket, Key: object }));
  }

  async *keys(): AsyncIterable<string> {
    let token: string | undefined;
    do {
      const page = await this.#client.send(
        new this.#sdk.s3.ListObjectsV2Command({
          Bucket: this.#bucket,
          Prefix: this.#prefix,
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const item of page.Contents ?? []) {
        const key = item.Key?.slice(this.#prefix.length) ?? '';
        if (BLOB_KEY.test(key)) yield key;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async close(): Promise<void> {
    this.#client.destroy();
  }

  #objectOf(key: string): string {
    return `${this.#prefix}${checkBlobKey(key)}`;
  }
}

function isNotFound(error: unknown): boolean {
  const { name, $metadata } = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return name === 'NoSuchKey' || name === 'NotFound' || $metadata?.httpStatusCode === 404;
}
