/**
 * The callback shapes of the specification (each family has a success and an error shape),
 * defined once: families, part names, media types and the default limits of a receiver.
 * Everything else (CLI flags, the service's validation, its OpenAPI document, the store's
 * CHECK) is derived from {@link FAMILY_PARTS}.
 */

export type CallbackEvent = 'success' | 'error';
export type MediaType = 'image/jpeg' | 'video/mp4';

/** Text parts common to every callback, in wire order. */
export const COMMON_PARTS = ['status', 'id_gen', 'time_gen'] as const;

export interface FamilyParts {
  /** Name of the file part of a success callback. */
  readonly result: string;
  /** Name of the text part of an error callback. */
  readonly error: string;
  /** Media types the result part may hold. */
  readonly mediaTypes: readonly MediaType[];
}

const PARTS_BY_FAMILY = {
  A: { result: 'result_pv', error: 'message', mediaTypes: ['image/jpeg', 'video/mp4'] },
  B: { result: 'res_image', error: 'img_message', mediaTypes: ['image/jpeg'] },
} satisfies Record<string, FamilyParts>;

export type Family = keyof typeof PARTS_BY_FAMILY;

/** Every family's parts and media types: the one place a family is defined. */
export const FAMILY_PARTS: Readonly<Record<Family, FamilyParts>> = PARTS_BY_FAMILY;

export const FAMILIES: readonly Family[] = Object.keys(PARTS_BY_FAMILY) as Family[];

/** How messages name what a family carries. */
const MEDIA_NOUNS: Readonly<Record<MediaType, string>> = {
  'image/jpeg': 'JPEG images',
  'video/mp4': 'MP4 videos',
};

/** The families whose success callbacks may carry `mediaType`, in order. */
export function familiesCarrying(mediaType: MediaType): Family[] {
  return FAMILIES.filter((family) => FAMILY_PARTS[family].mediaTypes.includes(mediaType));
}

/**
 * Why `family` cannot carry `mediaType`, or undefined when it can.
 *
 * @example
 * familyMediaProblem('B', 'video/mp4'); // 'family B carries JPEG images only'
 */
export function familyMediaProblem(family: Family, mediaType: MediaType): string | undefined {
  const carried = FAMILY_PARTS[family].mediaTypes;
  if (carried.includes(mediaType)) return undefined;
  return `family ${family} carries ${carried.map((type) => MEDIA_NOUNS[type]).join(' or ')} only`;
}

/** Whether `text` names a family (for flags and query parameters). */
export function isFamily(text: unknown): text is Family {
  return typeof text === 'string' && Object.hasOwn(PARTS_BY_FAMILY, text);
}

/** Which family and role a part name belongs to; undefined for a name no callback has. */
export function classifyPartName(
  name: string,
): { role: 'common' } | { role: 'result' | 'error'; family: Family } | undefined {
  if ((COMMON_PARTS as readonly string[]).includes(name)) return { role: 'common' };
  for (const family of FAMILIES) {
    const parts = FAMILY_PARTS[family];
    if (name === parts.result) return { role: 'result', family };
    if (name === parts.error) return { role: 'error', family };
  }
  return undefined;
}

/** The exact part names of one shape, in the order a sender writes them. */
export function partsOf(family: Family, event: CallbackEvent): readonly string[] {
  const parts = FAMILY_PARTS[family];
  return [...COMMON_PARTS, event === 'success' ? parts.result : parts.error];
}

/** File extension the service gives a result file of this media type. */
export function extensionOf(mediaType: MediaType): '.jpg' | '.mp4' {
  return mediaType === 'video/mp4' ? '.mp4' : '.jpg';
}

/** Limits a receiver enforces; every one is configurable. */
export interface Limits {
  /** Largest result file, in bytes. */
  fileBytes: number;
  /** Largest text part, in bytes. */
  textBytes: number;
  /** Largest header block of one part, in bytes. */
  headerBytes: number;
  /** Most parts in one body. */
  parts: number;
  /** Largest `id_gen`, in bytes. */
  idGenBytes: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  fileBytes: 1024 * 1024 * 1024,
  textBytes: 64 * 1024,
  headerBytes: 16 * 1024,
  parts: 4,
  idGenBytes: 256,
});

/** Fields every callback carries. */
interface CallbackFields {
  /** Opaque status text; never used to tell events apart. */
  status: string;
  /** Identifier of the operation: the idempotency key. */
  id_gen: string;
  /** Opaque time text; see {@link parseTimeGen} for a parsed form. */
  time_gen: string;
}

/** The result file of a success callback, as a receiver saw it. */
export interface ReceivedFile<S = unknown> {
  /** Part name that carried it: its family's result part (`result_pv` in family A). */
  part: string;
  /** The filename the sender gave; informative only, never a path. */
  filename: string;
  /** The media type the sender declared, or null when the part had no Content-Type. */
  declaredType: string | null;
  /** The media type the bytes show. */
  mediaType: MediaType;
  /** Size in bytes. */
  bytes: number;
  /** Lower-case hex SHA-256 of the bytes, or null when hashing was turned off. */
  sha256: string | null;
  /** Where the bytes went: whatever the sink factory returned. */
  sink: S;
}

export interface SuccessCallback<S = unknown> extends CallbackFields {
  event: 'success';
  family: Family;
  file: ReceivedFile<S>;
}

export interface ErrorCallback extends CallbackFields {
  event: 'error';
  family: Family;
  /** The error description: its family's error part (`message` in family A). */
  message: string;
}

/**
 * A decoded callback. Switch on `event` (and `family` where the part names matter).
 *
 * @example
 * switch (callback.event) {
 *   case 'success': console.log(callback.file.mediaType, callback.file.bytes); break;
 *   case 'error': console.log(callback.message); break;
 * }
 */
export type Callback<S = unknown> = SuccessCallback<S> | ErrorCallback;
