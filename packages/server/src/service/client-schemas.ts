/** JSON Schemas of the clients' routes: keys and webhook secrets (see api-schemas.ts). */
import { CLIENT_NAME, KEY_ROLES } from '../store/index.ts';

const TIME = { type: 'string', format: 'date-time' } as const;
const MAYBE_TIME = { type: ['string', 'null'], format: 'date-time' } as const;
const CLIENT = {
  type: 'string',
  pattern: CLIENT_NAME.source,
  description: "The client's name; `default` is the keyless one, signed with the configured secret.",
} as const;

const KEY_SCHEMA = {
  type: 'object',
  required: ['key_id', 'client', 'role', 'created_at', 'expires_at', 'last_used_at', 'revoked_at'],
  properties: {
    key_id: { type: 'string', description: 'The key’s public name; the key itself is never shown again.' },
    client: CLIENT,
    role: { type: 'string', enum: KEY_ROLES },
    created_at: TIME,
    expires_at: MAYBE_TIME,
    last_used_at: { ...MAYBE_TIME, description: 'Kept to the minute.' },
    revoked_at: MAYBE_TIME,
  },
} as const;

export const CLIENT_SCHEMAS = {
  Key: KEY_SCHEMA,
  KeyList: {
    type: 'object',
    required: ['keys'],
    properties: { keys: { type: 'array', items: { $ref: '#/components/schemas/Key' } } },
  },
  CreateKey: {
    type: 'object',
    required: ['client'],
    additionalProperties: false,
    properties: {
      client: CLIENT,
      role: { type: 'string', enum: KEY_ROLES, default: 'client' },
      expires_in: { type: 'string', description: 'A duration: `12h`, `30d`; absent, it never expires.' },
    },
  },
  CreatedKey: {
    type: 'object',
    required: ['key', 'key_id', 'client', 'role', 'expires_at'],
    properties: {
      key: { type: 'string', description: 'Send it as `Authorization: Bearer <key>`; shown only this once.' },
      key_id: { type: 'string' },
      client: CLIENT,
      role: { type: 'string', enum: KEY_ROLES },
      expires_at: MAYBE_TIME,
    },
  },
  WebhookSecret: {
    type: 'object',
    required: ['secret'],
    properties: {
      secret: {
        type: 'string',
        description:
          "The calling client's `whsec_…` signing secret (client `default`: its configured ones, space-separated).",
      },
    },
  },
} as const;
