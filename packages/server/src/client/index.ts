/**
 * @mediahook/server/client: a typed client of the service's HTTP API with no dependencies, on
 * the runtime's `fetch` (Node, Bun, Deno, browsers).
 *
 * @example
 * import { createClient, MediahookApiError } from '@mediahook/server/client';
 *
 * const client = createClient({ baseUrl: 'http://127.0.0.1:8080', key: process.env.MEDIAHOOK_KEY });
 * const { id_gen } = await client.operations.create({
 *   kind: 'image',
 *   family: 'A',
 *   prompt: 'a lighthouse at dusk',
 *   webhook_url: 'https://app.example/hook',
 * });
 * console.log((await client.operations.get(id_gen)).state);
 */
export { MediahookApiError } from './api-error.ts';
export type {
  CreateKey,
  CreateOperation,
  Endpoint,
  EndpointHealthList,
  ListOperationsQuery,
  Operation,
  OperationList,
  Stats,
} from './api-types.ts';
export {
  type ClientOptions,
  createClient,
  type MediahookClient,
  type SubmitCallbackInput,
} from './create-client.ts';
