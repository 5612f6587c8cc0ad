/**
 * Each client's signing secret: made on first need, kept in the store (sealed with AES-256-GCM
 * when the operator gives a secret key), rotated with an overlap during which callbacks carry
 * both signatures. Client `default`'s secrets are the configured ones (`--secret`).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { secretKey } from 'mediahook/protocol';
import { type ClientSecretRecord, type ClientSecretStore, DEFAULT_CLIENT } from '../../store/index.ts';
import { ApiError } from '../api-error.ts';

interface ClientSecretsOptions {
  store: ClientSecretStore;
  /** Client `default`'s secrets, `whsec_…` (the configured `--secret`); none: its callbacks go unsigned. */
  defaultSecrets?: readonly string[] | undefined;
  /** Seals secrets at rest when given (any random text of 32 characters or more). */
  secretKey?: string | undefined;
  /** How long the replaced secret still signs after a rotation (24 h). */
  overlapMs?: number | undefined;
  /** How long a secret read is reused: another process's rotation is seen within it (2 s). */
  cacheMs?: number | undefined;
}

const SEALED = 'sealed:v1:';
const DEFAULT_SECRET_OVERLAP_MS = 24 * 3_600_000;

/** A new `whsec_…` secret: 24 random bytes. */
function newSigningSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/**
 * A secret key from its text: at least 32 characters, hashed to the 256-bit AES key (the text
 * should be random, e.g. `openssl rand -base64 32`: it is not stretched like a password).
 */
function sealingKeyOf(text: string): Buffer {
  if (text.trim().length < 32) throw new TypeError('the secret key needs at least 32 characters');
  return createHash('sha256').update(text.trim(), 'utf8').digest();
}

/** Seals `secret` for `client` (the name is authenticated too: a sealed secret cannot move rows). */
function seal(key: Buffer, client: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(client, 'utf8'));
  const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return SEALED + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
}

function unseal(key: Buffer | undefined, client: string, kept: string): string {
  if (!kept.startsWith(SEALED)) return kept;
  if (key === undefined) {
    throw new Error(`the signing secret of client ${client} is sealed: give the secret key (--secret-key)`);
  }
  const bytes = Buffer.from(kept.slice(SEALED.length), 'base64url');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12))
      .setAAD(Buffer.from(client, 'utf8'))
      .setAuthTag(bytes.subarray(12, 28));
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    throw new Error(`the signing secret of client ${client} does not open with this secret key`);
  }
}

interface Cached {
  at: number;
  record: ClientSecretRecord;
}

/**
 * @example
 * const secrets = new ClientSecrets({ store, defaultSecrets: ['whsec_…'], secretKey });
 * const signWith = await secrets.signingSecrets(operation.client);
 */
export class ClientSecrets {
  readonly #store: ClientSecretStore;
  readonly #defaults: readonly string[];
  readonly #key: Buffer | undefined;
  readonly #overlapMs: number;
  readonly #cacheMs: number;
  readonly #cache = new Map<string, Cached>();

  constructor(options: ClientSecretsOptions) {
    for (const secret of options.defaultSecrets ?? []) secretKey(secret);
    this.#store = options.store;
    this.#defaults = options.defaultSecrets ?? [];
    this.#key = options.secretKey === undefined ? undefined : sealingKeyOf(options.secretKey);
    this.#overlapMs = options.overlapMs ?? DEFAULT_SECRET_OVERLAP_MS;
    this.#cacheMs = options.cacheMs ?? 2_000;
  }

  /** What signs `client`'s callbacks now: the current secret first, then one still in its overlap. */
  async signingSecrets(client: string): Promise<string[]> {
    if (client === DEFAULT_CLIENT) return [...this.#defaults];
    const record = await this.#record(client);
    const now = Date.now();
    const current = unseal(this.#key, client, record.secret);
    const previous =
      record.previous_secret !== null && record.previous_until !== null && record.previous_until > now
        ? [unseal(this.#key, client, record.previous_secret)]
        : [];
    return [current, ...previous];
  }

  /** The client's secret as `GET /v1/webhooks/secret` shows it (default's: its secrets, space-separated). */
  async secretOf(client: string): Promise<string> {
    if (client === DEFAULT_CLIENT) {
      if (this.#defaults.length === 0) {
        throw new ApiError(
          404,
          'not_found',
          'client default has no signing secret: its callbacks go unsigned (configure one with --secret)',
        );
      }
      return this.#defaults.join(' ');
    }
    return unseal(this.#key, client, (await this.#record(client)).secret);
  }

  /** A new secret for the client; the current one signs too for the overlap. */
  async rotate(client: string): Promise<string> {
    if (client === DEFAULT_CLIENT) {
      throw new ApiError(
        409,
        'conflict',
        "client default's secret is configured (--secret): rotate it there",
      );
    }
    await this.#record(client);
    const secret = newSigningSecret();
    const record = await this.#store.rotateClientSecret(
      client,
      this.#kept(client, secret),
      Date.now() + this.#overlapMs,
    );
    this.#cache.set(client, { at: Date.now(), record });
    return secret;
  }

  async #record(client: string): Promise<ClientSecretRecord> {
    const cached = this.#cache.get(client);
    if (cached && Date.now() - cached.at < this.#cacheMs) return cached.record;
    const record =
      (await this.#store.getClientSecret(client)) ??
      (await this.#store.addClientSecret(client, this.#kept(client, newSigningSecret())));
    this.#cache.set(client, { at: Date.now(), record });
    return record;
  }

  #kept(client: string, secret: string): string {
    return this.#key === undefined ? secret : seal(this.#key, client, secret);
  }
}
