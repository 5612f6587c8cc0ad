/**
 * The route table, the router, `/openapi.json` and the typed client agree: every route of the
 * table is dispatched by the running service, is in the document with its method, parameters,
 * body and answers, and has its client method; and none of them has anything more. The CORS
 * preflight allows every method and declared header of the table.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { openApiDocument } from '../../src/service/openapi-document.ts';
import type { Route } from '../../src/service/routes/route.ts';
import { ROUTES } from '../../src/service/routes/route-table.ts';
import { routerOf } from '../../src/service/routes/router.ts';
import { type RunningService, startService } from './service-harness.ts';

const METHODS = ['GET', 'POST', 'DELETE', 'PUT', 'PATCH'];

/** A route's path with each parameter filled in. */
const sample = (route: Route) => route.path.replace(/\{[^}]+\}/g, 'sample-1');

/** Arguments to call each client method with: a new method needs its line here. */
const CALLS: Record<string, unknown[]> = {
  'operations.create': [
    { kind: 'image', family: 'A', prompt: 'p', webhook_url: 'http://127.0.0.1:9/hook' },
    { idempotencyKey: 'order-1' },
  ],
  'operations.get': ['op-1'],
  'operations.list': [
    { state: 'queued', family: 'A', callback_state: 'dead', endpoint: 'a:1', limit: 5, before: 'x' },
  ],
  'operations.redeliver': ['op-1'],
  'operations.result': ['op-1'],
  'callbacks.submit': [
    { webhook_url: 'http://127.0.0.1:9/hook', family: 'A', id_gen: 'op-1', message: 'failed' },
  ],
  'endpoints.list': [],
  'endpoints.get': ['127.0.0.1:9'],
  'endpoints.recover': ['127.0.0.1:9', new Date(0)],
  stats: ['24h'],
  'keys.list': [],
  'keys.create': [{ client: 'acme', role: 'client', expires_in: '30d' }],
  'keys.revoke': ['key_0123'],
  'webhooks.secret': [],
  'webhooks.rotate': [],
};

/** Every function of the client, by its dotted name. */
function methodsOf(object: object, prefix = ''): [string, (...args: unknown[]) => Promise<unknown>][] {
  return Object.entries(object).flatMap(([name, value]) =>
    typeof value === 'function'
      ? [[`${prefix}${name}`, value as (...args: unknown[]) => Promise<unknown>]]
      : methodsOf(value as object, `${prefix}${name}.`),
  );
}

type OpenApiOperation = {
  operationId: string;
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema: { $ref: string } }> };
  responses: Record<string, unknown>;
};
type PathItem = { parameters?: { name: string; in: string }[] } & Record<string, OpenApiOperation>;

describe('the route table', () => {
  let run: RunningService;
  beforeAll(async () => {
    run = await startService({ workers: false });
  });
  afterAll(async () => {
    await run?.stop();
  });

  it('names each route once, by method and path and by id', () => {
    const keys = ROUTES.map((route) => `${route.method} ${route.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(new Set(ROUTES.map((route) => route.id)).size).toBe(ROUTES.length);
  });

  it('is what the service dispatches: each route reached, every other method 405', async () => {
    const route = routerOf(ROUTES);
    for (const entry of ROUTES) {
      expect(route(entry.method, sample(entry)).route).toBe(entry);
      const answer = await run.call(entry.method, sample(entry));
      const where = `${entry.method} ${entry.path}: ${answer.status} ${answer.text.slice(0, 200)}`;
      expect(answer.status, where).not.toBe(405);
      expect(String(answer.body?.error?.message), where).not.toMatch(/^no such resource/);
    }
    for (const path of new Set(ROUTES.map(sample))) {
      const taken = ROUTES.filter((entry) => sample(entry) === path).map((entry) => entry.method);
      for (const method of METHODS.filter((name) => !taken.includes(name as Route['method']))) {
        const answer = await run.call(method, path);
        expect(answer.status, `${method} ${path}`).toBe(405);
        const allow = String(answer.headers['allow']).split(', ');
        expect(allow.filter((name) => name !== 'HEAD').sort(), path).toEqual([...taken].sort());
      }
    }
    expect((await run.get('/v1/nothing-here')).status).toBe(404);
    expect((await run.get('/nothing-here')).status).toBe(404);
  });

  it("is what an allowed origin's preflight allows: every method and declared header", async () => {
    const origin = 'https://app.example';
    const allowing = await startService({ workers: false, allowedOrigins: [origin] });
    try {
      const preflight = await allowing.call('OPTIONS', '/v1/operations', undefined, {
        origin,
        'access-control-request-method': 'POST',
      });
      expect(preflight.status).toBe(204);
      const methods = String(preflight.headers['access-control-allow-methods']).split(', ');
      const headers = String(preflight.headers['access-control-allow-headers']).split(', ');
      for (const route of ROUTES.filter((entry) => entry.role !== 'open')) {
        expect(methods).toContain(route.method);
        for (const header of route.headers ?? []) expect(headers).toContain(header.name.toLowerCase());
      }
    } finally {
      await allowing.stop();
    }
  });

  it('is what /openapi.json describes, and nothing more', async () => {
    const document = (await run.get('/openapi.json')).body as { paths: Record<string, PathItem> };
    expect(document).toEqual(openApiDocument());
    const described = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((key) => key !== 'parameters')
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(described.sort()).toEqual(ROUTES.map((route) => `${route.method} ${route.path}`).sort());
    for (const route of ROUTES) {
      const item = document.paths[route.path]!;
      const operation = item[route.method.toLowerCase()]!;
      expect(operation.operationId).toBe(route.id);
      const pathNames = [...route.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
      expect((item.parameters ?? []).map((parameter) => [parameter.name, parameter.in])).toEqual(
        pathNames.map((name) => [name, 'path']),
      );
      expect((operation.parameters ?? []).map((parameter) => `${parameter.in} ${parameter.name}`)).toEqual([
        ...(route.query ?? []).map((parameter) => `query ${parameter.name}`),
        ...(route.headers ?? []).map((parameter) => `header ${parameter.name}`),
      ]);
      const body = operation.requestBody?.content;
      expect(body && Object.entries(body).map(([type, media]) => [type, media.schema.$ref])).toEqual(
        route.body && [[route.body.type, `#/components/schemas/${route.body.schema}`]],
      );
      const statuses = Object.keys(route.answers);
      if (route.role !== 'open') statuses.push('401');
      if (route.role !== 'open' && (route.method !== 'GET' || route.role === 'admin')) statuses.push('403');
      expect(Object.keys(operation.responses).sort()).toEqual(statuses.sort());
    }
  });

  it('is what the typed client calls: one method per route, and no other', async () => {
    const sent: { method: string; url: URL; type: string | null; headers: Headers }[] = [];
    const client = createClient({
      baseUrl: 'http://127.0.0.1:9/',
      fetch: async (input, init) => {
        const headers = new Headers(init?.headers);
        sent.push({
          method: init!.method!,
          url: new URL(String(input)),
          type: headers.get('content-type'),
          headers,
        });
        return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
      },
    });
    const methods = methodsOf(client);
    const withRoutes = ROUTES.filter((route) => route.client !== undefined);
    expect(methods.map(([name]) => name).sort()).toEqual(withRoutes.map((route) => route.client).sort());
    const route = routerOf(ROUTES);
    for (const [name, method] of methods) {
      expect(CALLS, `arguments for client.${name}`).toHaveProperty([name]);
      await method(...CALLS[name]!);
      const request = sent.pop()!;
      const called = route(request.method, request.url.pathname).route;
      expect(called?.client, `client.${name} sent ${request.method} ${request.url.pathname}`).toBe(name);
      const query = (called!.query ?? []).map((parameter) => parameter.name);
      for (const key of request.url.searchParams.keys()) expect(query, `${name}: ?${key}`).toContain(key);
      const type = request.type?.split(';')[0] ?? null;
      expect(type, name).toBe(called!.body?.type ?? null);
    }
  });
});
