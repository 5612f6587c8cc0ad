/** Why a blob store cannot be opened, with a stable code. */
export type BlobStoreErrorCode = 'blobs_invalid' | 'blobs_need_postgres' | 'blobs_s3_unavailable';

export class BlobStoreError extends Error {
  readonly code: BlobStoreErrorCode;

  constructor(code: BlobStoreErrorCode, message: string) {
    super(message);
    this.name = 'BlobStoreError';
    this.code = code;
  }
}
