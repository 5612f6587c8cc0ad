/**
 * `GET /openapi.json` is a valid OpenAPI 3.1 document, generated from the same schemas that
 * validate requests, and its `webhooks` describe exactly what the service sends.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeCallback,
  encodeCallback,
  type Family,
  type OutgoingCallback,
  partsOf,
} from '../../src/protocol/index.ts';
import { openApiDocument } from '../../src/service/openapi-document.ts';
import { type RunningService, startService } from './service-harness.ts';

type Schema = { required: string[]; properties: Record<string, unknown>; additionalProperties: boolean };

describe('the OpenAPI document', () => {
  let run: RunningService;
  beforeAll(async () => {
    run = await startService({ workers: false });
  });
  afterAll(async () => {
    await run?.stop();
  });

  it('is served at /openapi.json and passes an OpenAPI 3.1 validator', async () => {
    const served = await run.get('/openapi.json');
    expect(served.status).toBe(200);
    expect(served.body).toEqual(openApiDocument());
    const validator = new Validator();
    const result = await validator.validate(served.body);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(served.body.openapi).toMatch(/^3\.1\./);
  });

  it('describes the four callbacks with exactly the parts the encoder sends, in order', async () => {
    const document = openApiDocument() as {
      webhooks: Record<
        string,
        { post: { requestBody: { content: Record<string, { schema: { $ref: string } }> } } }
      >;
      components: { schemas: Record<string, Schema> };
    };
    const shapes: [string, Family, 'success' | 'error'][] = [
      ['callbackASuccess', 'A', 'success'],
      ['callbackAError', 'A', 'error'],
      ['callbackBSuccess', 'B', 'success'],
      ['callbackBError', 'B', 'error'],
    ];
    for (const [name, family, event] of shapes) {
      const ref = document.webhooks[name]!.post.requestBody.content['multipart/form-data']!.schema.$ref;
      const schema = document.components.schemas[ref.split('/').pop()!]!;
      expect(schema.required).toEqual([...partsOf(family, event)]);
      expect(Object.keys(schema.properties)).toEqual([...partsOf(family, event)]);
      expect(schema.additionalProperties).toBe(false);

      const fields = { family, status: event, id_gen: 'op-1', time_gen: '2026-11-22T10:00:00.000Z' };
      const callback: OutgoingCallback =
        event === 'success'
          ? { ...fields, event, file: Buffer.from([0xff, 0xd8, 0xff, 0xe0]), mediaType: 'image/jpeg' }
          : { ...fields, event, message: 'failed' };
      const encoded = await encodeCallback(callback, 'b');
      const chunks: Buffer[] = [];
      for await (const chunk of encoded.body()) chunks.push(chunk);
      const body = Buffer.concat(chunks).toString('latin1');
      const sent = [...body.matchAll(/; name="([^"]+)"/g)].map((match) => match[1]);
      expect(sent).toEqual(schema.required);
      await expect(decodeCallback([Buffer.from(body, 'latin1')], encoded.contentType)).resolves.toMatchObject(
        {
          family,
          event,
        },
      );
    }
  });

  it('validates what the API answers against the Operation schema', async () => {
    const created = await run.post('/v1/operations', {
      kind: 'image',
      family: 'A',
      prompt: 'schema check',
      webhook_url: 'http://127.0.0.1:9/hook',
    });
    expect(created.status).toBe(202);
    const document = openApiDocument() as { components: { schemas: Record<string, object> } };
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema({ $id: 'openapi', components: document.components });
    const validate = ajv.compile({ $ref: 'openapi#/components/schemas/Operation' });
    expect(validate(created.body), JSON.stringify(validate.errors)).toBe(true);
    const listed = await run.get('/v1/operations?limit=5');
    const validateList = ajv.compile({ $ref: 'openapi#/components/schemas/OperationList' });
    expect(validateList(listed.body), JSON.stringify(validateList.errors)).toBe(true);
  });
});
