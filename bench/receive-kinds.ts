/** The servers of the receive suite (receive-servers.ts runs one; receive.ts drives them). */
export const SERVER_KINDS = [
  'ours',
  'fastify',
  'express',
  'fastify-fs',
  'express-fs',
  'hono',
  'busboy',
  'busboy-fs',
  'raw-http',
  'raw-sink',
  'raw-tcp',
] as const;
export type ServerKind = (typeof SERVER_KINDS)[number];
