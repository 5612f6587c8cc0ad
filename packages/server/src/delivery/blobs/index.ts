export {
  type AllocateBuffer,
  type BlobBytes,
  BLOB_ID,
  blobKeyOf,
  type BlobStore,
  idGenOfBlobKey,
  type OpenedBlob,
} from './blob-store.ts';
export { probeBlobStore } from './blob-probe.ts';
export { BlobStoreError, type BlobStoreErrorCode } from './blob-store-error.ts';
export {
  DEFAULT_BLOCKING_READ_MAX_BYTES,
  DirectoryBlobStore,
  type DirectoryBlobStoreOptions,
} from './directory-blob-store.ts';
export { openBlobStore, type OpenBlobStoreOptions } from './open-blob-store.ts';
export { PostgresBlobStore, type PostgresBlobStoreOptions } from './postgres-blob-store.ts';
export { parseS3Location, S3BlobStore, type S3BlobStoreOptions } from './s3-blob-store.ts';
