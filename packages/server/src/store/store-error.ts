/**
 * Stable error codes of the store. The HTTP layer maps them to answers (`not_found` → 404,
 * `conflict` → 409); workers treat `lease_lost` as "someone else has this now".
 */
export const STORE_ERROR_CODES = [
  'not_found',
  'conflict',
  'lease_lost',
  'invalid_argument',
  'migration_failed',
  'unavailable',
  'driver_missing',
] as const;

export type StoreErrorCode = (typeof STORE_ERROR_CODES)[number];

/**
 * An error the store reports on purpose, with a code that never changes meaning.
 *
 * @example
 * try { await store.redeliver(id); }
 * catch (e) { if (isStoreError(e) && e.code === 'not_found') reply(404); else throw e; }
 */
export class StoreError extends Error {
  override readonly name = 'StoreError';
  readonly code: StoreErrorCode;

  constructor(code: StoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export function isStoreError(value: unknown): value is StoreError {
  return value instanceof StoreError;
}
