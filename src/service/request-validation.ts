import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ApiError } from './api-error.ts';
import { CREATE_OPERATION_SCHEMA } from './api-schemas.ts';

// ajv-formats is CommonJS: its function is the module itself or its `default`, by loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => unknown;

const ajv = new Ajv2020({ allErrors: false, strict: true });
addFormats(ajv);

const validateCreate = ajv.compile(CREATE_OPERATION_SCHEMA);

function describe(error: ErrorObject | undefined): string {
  if (!error) return 'the request body is invalid';
  const where = error.instancePath === '' ? 'the body' : error.instancePath.slice(1).replaceAll('/', '.');
  if (error.keyword === 'additionalProperties') {
    return `${where} has an unknown field ${JSON.stringify(error.params.additionalProperty)}`;
  }
  if (error.keyword === 'required')
    return `${where} lacks the field ${JSON.stringify(error.params.missingProperty)}`;
  return `${where} ${error.message ?? 'is invalid'}`;
}

/** The body of `POST /v1/operations`, once validated. */
export interface CreateOperationRequest {
  kind: 'image' | 'video';
  family: 'A' | 'B';
  webhook_url: string;
  prompt: string;
  fail_with?: string;
  status?: string;
}

/**
 * Validates a create-operation body against its schema and the rules a schema cannot say
 * (family B carries images only). Throws an {@link ApiError} 400 with a code.
 */
export function parseCreateOperation(body: unknown): CreateOperationRequest {
  if (!validateCreate(body)) {
    throw new ApiError(400, 'invalid_request', describe(validateCreate.errors?.[0]));
  }
  const request = body as CreateOperationRequest;
  if (request.family === 'B' && request.kind === 'video') {
    throw new ApiError(400, 'family_b_video', 'family B carries JPEG images only: a video needs family A');
  }
  return request;
}
