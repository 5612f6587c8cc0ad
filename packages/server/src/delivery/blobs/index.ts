export {
  type AllocateBuffer,
  type BlobBytes,
  BLOB_ID,
  blobKeyOf,
  type BlobStore,
  idGenOfBlobKey,
} from './blob-store.ts';
export { probeBlobStore } from './blob-probe.ts';
export { BlobStoreError, type BlobStoreErrorCode } from './blob-store-error.ts';
export { DirectoryBlobStore } from './directory-blob-store.ts';
export { openBlobStore } from './open-blob-store.ts';
export { PostgresBlobStore } from './postgres-blob-store.ts';
export { S3BlobStore } from './s3-blob-store.ts';
