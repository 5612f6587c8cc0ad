import { createHash, randomBytes } from 'node:crypto';
import {
  DEFAULT_LIMITS,
  FAMILY_PARTS,
  type Family,
  type MediaType,
  ProtocolError,
  SNIFF_BYTES,
  sniffMediaType,
} from 'mediahook/protocol';
import { blobKeyOf, type BlobBytes, type BlobStore } from '../../delivery/index.ts';

/** A result file taken in: where it is kept (unless only hashed), what it is, its digest. */
export interface TakenFile {
  key: string | null;
  mediaType: MediaType;
  bytes: number;
  sha256: string;
}

interface FileIntake {
  /** The operation's id: the key is made of it (plus a nonce, so two intakes never share one). */
  idGen: string;
  family: Family;
  /** Largest file, in bytes (the protocol's 1 GiB by default). */
  maxBytes?: number | undefined;
  /** Where the bytes go; null: only sniffed, counted and hashed (a duplicate's). */
  blobs: BlobStore | null;
}

/**
 * Takes a result file in as its bytes arrive: sniffs its media type from the first bytes
 * (JPEG, or MP4 in family A, else `media_mismatch`), counts it against the limit
 * (`file_too_large`), hashes it, and streams it to the blob store. A failure leaves no file.
 */
export async function takeFileIn(bytes: BlobBytes, intake: FileIntake): Promise<TakenFile> {
  const maxBytes = intake.maxBytes ?? DEFAULT_LIMITS.fileBytes;
  const hash = createHash('sha256');
  const iterator = (async function* () {
    yield* bytes;
  })();
  // The first bytes decide the media type, and with it the key's extension.
  const head: Buffer[] = [];
  let headBytes = 0;
  while (headBytes < SNIFF_BYTES) {
    const next = await iterator.next();
    if (next.done) break;
    head.push(Buffer.from(next.value));
    headBytes += next.value.byteLength;
  }
  const mediaType = sniffMediaType(Buffer.concat(head).subarray(0, SNIFF_BYTES));
  if (mediaType === null) {
    await iterator.return(undefined);
    throw new ProtocolError('media_mismatch', 'the result file is neither JPEG nor MP4');
  }
  if (!FAMILY_PARTS[intake.family].mediaTypes.includes(mediaType)) {
    await iterator.return(undefined);
    throw new ProtocolError('media_mismatch', `family ${intake.family} cannot carry ${mediaType}`);
  }
  let total = 0;
  async function* checked(): AsyncGenerator<Uint8Array> {
    for (const chunk of head) yield count(chunk);
    for await (const chunk of iterator) yield count(chunk);
  }
  function count(chunk: Uint8Array): Uint8Array {
    total += chunk.byteLength;
    if (total > maxBytes) {
      throw new ProtocolError('file_too_large', `the result file is larger than ${maxBytes} bytes`);
    }
    hash.update(chunk);
    return chunk;
  }
  let key: string | null = null;
  if (intake.blobs) {
    key = blobKeyOf(intake.idGen, mediaType, randomBytes(6).toString('hex'));
    await intake.blobs.put(key, checked());
  } else {
    for await (const chunk of checked()) void chunk;
  }
  return { key, mediaType, bytes: total, sha256: hash.digest('hex') };
}
