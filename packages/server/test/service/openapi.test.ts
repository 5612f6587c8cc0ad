/**
 * `GET /openapi.json` is a valid OpenAPI 3.1 document, generated from the same schemas that
 * validate requests, and its `webhooks` describe exactly what the service sends.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallbackSender } from '../../src/delivery/index.ts';
import {
  decodeCallback,
  encodeCallback,
  FAMILY_PARTS,
  type Family,
  type OutgoingCallback,
  partsOf,
} from '../../../mediahook/src/protocol/index.ts';
import { openApiDocument } from '../../src/service/openapi-document.ts';
import { type RunningService, startService } from './service-harness.ts';

// ajv-formats is CommonJS: its function is the module itself or its `default`, by loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => unknown;

type Schema = { required: string[]; properties: Record<string, unknown>; additionalProperties: boolean };
type Parameter = { name: string; in: string; required?: boolean; description?: string; schema: object };
type Webhook = {
  post: {
    parameters: Parameter[];
    requestBody: {
      content: Record<
        string,
        { schema: { $ref: string }; encoding?: Record<string, { contentType: string }> }
      >;
    };
    responses: Record<string, { description: string; content?: object }>;
  };
};
type WebhookDocument = { webhooks: Record<string, Webhook>; components: { schemas: Record<string, Schema> } };

const WEBHOOKS: [string, Family, 'success' | 'error'][] = [
  ['callbackASuccess', 'A', 'success'],
  ['callbackAError', 'A', 'error'],
  ['callbackBSuccess', 'B', 'success'],
  ['callbackBError', 'B', 'error'],
];

const errorCallback: OutgoingCallback = {
  family: 'A',
  event: 'error',
  status: 'error',
  id_gen: 'op-headers-1',
  time_gen: '2026-11-22T10:00:00.000Z',
  message: 'failed',
};

/** A receiver on 127.0.0.1 that records each request's headers and answers `status`. */
async function recordingReceiver() {
  const seen: IncomingHttpHeaders[] = [];
  let status = 200;
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(status).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    seen,
    answer: (code: number) => {
      status = code;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

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

  it('describes each file part by its encoding alone, with the media types the encoder sends', async () => {
    const document = openApiDocument() as WebhookDocument;
    for (const [name, family, event] of WEBHOOKS) {
      const media = document.webhooks[name]!.post.requestBody.content['multipart/form-data']!;
      const schema = document.components.schemas[media.schema.$ref.split('/').pop()!]!;
      if (event === 'error') {
        expect(media.encoding).toBeUndefined();
        continue;
      }
      const part = FAMILY_PARTS[family].result;
      // OpenAPI 3.1: next to the Encoding Object's contentType a contentMediaType is ignored,
      // and without contentEncoding it would read as text; a binary part is a schema without them.
      expect(schema.properties[part]).not.toHaveProperty('contentMediaType');
      expect(schema.properties[part]).not.toHaveProperty('contentEncoding');
      expect(schema.properties[part]).not.toHaveProperty('type');
      const declared = media.encoding![part]!.contentType.split(',').map((type) => type.trim());
      expect(declared).toEqual([...FAMILY_PARTS[family].mediaTypes]);
      for (const mediaType of FAMILY_PARTS[family].mediaTypes) {
        const encoded = await encodeCallback(
          { ...errorCallback, family, event: 'success', file: Buffer.from([0xff, 0xd8, 0xff]), mediaType },
          'b',
        );
        const chunks: Buffer[] = [];
        for await (const chunk of encoded.body()) chunks.push(chunk);
        const body = Buffer.concat(chunks).toString('latin1');
        expect(body).toContain(`name="${part}"; filename=`);
        expect([...body.matchAll(/\r\nContent-Type: ([^\r]+)/g)].map((match) => match[1])).toEqual([
          mediaType,
        ]);
        expect(declared).toContain(mediaType);
      }
    }
  });

  it('declares the headers the sender sends, the signature ones as optional', async () => {
    const document = openApiDocument() as WebhookDocument;
    const receiver = await recordingReceiver();
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const signed = new CallbackSender({ ssrf: { allowPrivate: true }, secrets: [secret] });
    const unsigned = new CallbackSender({ ssrf: { allowPrivate: true } });
    try {
      expect((await signed.send(receiver.url, errorCallback)).verdict).toBe('delivered');
      expect((await unsigned.send(receiver.url, errorCallback)).verdict).toBe('delivered');
    } finally {
      await signed.close();
      await unsigned.close();
      await receiver.close();
    }
    const [signedHeaders, unsignedHeaders] = receiver.seen;
    expect(signedHeaders!['webhook-id']).toBe(errorCallback.id_gen);
    expect(unsignedHeaders).not.toHaveProperty('webhook-signature');
    const ajv = new Ajv2020({ strict: false });
    for (const [name] of WEBHOOKS) {
      const parameters = document.webhooks[name]!.post.parameters;
      expect(parameters.map((parameter) => [parameter.name, parameter.in, parameter.required])).toEqual([
        ['User-Agent', 'header', true],
        ['webhook-id', 'header', false],
        ['webhook-timestamp', 'header', false],
        ['webhook-signature', 'header', false],
      ]);
      for (const parameter of parameters) {
        if (parameter.name.startsWith('webhook-'))
          expect(parameter.description).toMatch(/when the service signs/);
        const validate = ajv.compile(parameter.schema);
        for (const headers of [signedHeaders!, unsignedHeaders!]) {
          const value = headers[parameter.name.toLowerCase()];
          if (value === undefined) {
            expect(parameter.required, `${parameter.name} is required but not sent`).toBe(false);
            continue;
          }
          expect(validate(value), `${parameter.name}: ${String(value)}`).toBe(true);
        }
      }
    }
  });

  it("documents how the service reads a receiver's answer: 2xx delivered, 410 gone, the rest retried", async () => {
    const document = openApiDocument() as WebhookDocument;
    const receiver = await recordingReceiver();
    const sender = new CallbackSender({ ssrf: { allowPrivate: true } });
    const verdicts = new Map<number, string>();
    try {
      for (const status of [200, 202, 204, 302, 400, 410, 500, 503]) {
        receiver.answer(status);
        verdicts.set(status, (await sender.send(receiver.url, errorCallback)).verdict);
      }
    } finally {
      await sender.close();
      await receiver.close();
    }
    for (const [name] of WEBHOOKS) {
      const responses = document.webhooks[name]!.post.responses;
      expect(Object.keys(responses).sort()).toEqual(['200', '2XX', '410', '500']);
      expect(responses['2XX']!.description).toMatch(/any 2xx counts as delivered/i);
      expect(responses['410']!.description).toMatch(/stops retrying/);
      expect(responses['500']!.description).toMatch(/retries, as it does on any other status/);
      for (const [status, verdict] of verdicts) {
        // The documented response for a status: its own code first, then its range (OpenAPI 3.1).
        const documented = [String(status), `${String(status)[0]}XX`].find((code) => code in responses);
        const expected =
          documented === '200' || documented === '2XX'
            ? 'delivered'
            : documented === '410'
              ? 'gone'
              : 'retry';
        expect(verdict, `${name}: ${status}`).toBe(expected);
      }
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
    addFormats(ajv);
    ajv.addSchema({ $id: 'openapi', components: document.components });
    const validate = ajv.compile({ $ref: 'openapi#/components/schemas/Operation' });
    expect(validate(created.body), JSON.stringify(validate.errors)).toBe(true);
    const listed = await run.get('/v1/operations?limit=5');
    const validateList = ajv.compile({ $ref: 'openapi#/components/schemas/OperationList' });
    expect(validateList(listed.body), JSON.stringify(validateList.errors)).toBe(true);
  });

  it('documents every answer the API gives: its status, media type and body', async () => {
    const good = { kind: 'image', family: 'A', prompt: 'documented', webhook_url: 'http://127.0.0.1:9/hook' };
    const created = await run.post('/v1/operations', good);
    const id = created.body.id_gen as string;
    const json = { 'content-type': 'application/json' };
    // [method, path template, path sent, body]: each answer must be one the document lists.
    const cases: [string, string, string, unknown?, Record<string, string>?][] = [
      ['POST', '/v1/operations', '/v1/operations', good],
      ['POST', '/v1/operations', '/v1/operations', { ...good, kind: 'video', family: 'B' }],
      ['POST', '/v1/operations', '/v1/operations', { ...good, prompt: 'a\u0000b' }],
      ['POST', '/v1/operations', '/v1/operations', '{"kind":', json],
      ['POST', '/v1/operations', '/v1/operations', '{}', { 'content-type': 'text/plain' }],
      ['POST', '/v1/operations', '/v1/operations', JSON.stringify({ ...good, prompt: 'x'.repeat(70_000) })],
      ['GET', '/v1/operations', '/v1/operations?limit=2'],
      ['GET', '/v1/operations', '/v1/operations?limit=0'],
      ['GET', '/v1/operations', '/v1/operations?before=%00'],
      ['GET', '/v1/operations/{id_gen}', `/v1/operations/${id}`],
      ['GET', '/v1/operations/{id_gen}', '/v1/operations/nope'],
      ['GET', '/v1/operations/{id_gen}', '/v1/operations/%00'],
      ['POST', '/v1/operations/{id_gen}/redeliver', `/v1/operations/${id}/redeliver`],
      ['POST', '/v1/operations/{id_gen}/redeliver', '/v1/operations/nope/redeliver'],
      ['GET', '/v1/operations/{id_gen}/result', `/v1/operations/${id}/result`],
      ['GET', '/v1/endpoints/{key}', '/v1/endpoints/127.0.0.1%3A9'],
      ['GET', '/v1/endpoints/{key}', '/v1/endpoints/%00'],
      ['GET', '/healthz', '/healthz'],
      ['GET', '/metrics', '/metrics'],
    ];
    type Response = { content?: Record<string, { schema: object }> };
    const document = openApiDocument() as {
      paths: Record<string, Record<string, { responses: Record<string, Response> }>>;
      components: object;
    };
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv); // timestamps are checked as date-time, not only as strings
    ajv.addSchema({ $id: 'openapi', components: document.components });
    const seen = new Set<number>();
    for (const [method, template, path, body, headers] of cases) {
      const answer = await run.call(method, path, body, headers);
      const where = `${method} ${path} → ${answer.status}`;
      seen.add(answer.status);
      const response = document.paths[template]![method.toLowerCase()]!.responses[String(answer.status)];
      expect(response, `${where} is not documented`).toBeDefined();
      const mediaType = String(answer.headers['content-type']).split(';')[0]!.trim();
      const content = response!.content?.[mediaType];
      expect(content, `${where}: ${mediaType} is not documented`).toBeDefined();
      if (mediaType === 'application/json') {
        const schema = content!.schema as { $ref?: string };
        const validate = ajv.compile(schema.$ref ? { $ref: `openapi${schema.$ref}` } : schema);
        expect(validate(answer.body), `${where}: ${JSON.stringify(validate.errors)}`).toBe(true);
      }
    }
    // The cases reach every kind of answer, or the check above proves less than it says.
    expect([...seen].sort()).toEqual([200, 202, 400, 404, 409, 413, 415]);
  });
});
