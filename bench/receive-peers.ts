/**
 * The peers of the receive suite: the servers a receiver would otherwise be built with, each
 * storing the file through the same DiskSink as ours (see receive-common.ts). Loaded, with its
 * framework, only by the server process that runs it.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { default as Busboy, FileInfo } from 'busboy';
import type { NextFunction, Request, Response } from 'express';
import type multer from 'multer';
import type { MultipartFields } from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type DiskSink, fileNameFor } from '../packages/mediahook/src/receiver/index.ts';
import {
  answer,
  CountedSink,
  commit,
  counts,
  listen,
  pipeToSink,
  sendJson,
  track,
  work,
} from './receive-common.ts';

/** A text field @fastify/multipart read before the file, if there is one by that name. */
function fieldValue(fields: MultipartFields, name: string): unknown {
  const field = fields[name];
  return field && !Array.isArray(field) && field.type === 'field' ? field.value : undefined;
}

/** Fastify 5 + @fastify/multipart: `request.file()`, its fields, its stream into the sink. */
export async function fastify(out: string): Promise<number> {
  return startFastify(async (request, reply) => {
    const data = await request.file();
    if (!data) throw new Error('no file part');
    const sink = new CountedSink(out);
    try {
      await pipeToSink(data.file, sink);
      if (data.file.truncated) throw new Error('the file was truncated');
      const id = await commit(sink, out, fieldValue(data.fields, 'id_gen'), data.mimetype);
      return reply.header('content-type', 'application/json; charset=utf-8').send(answer(id));
    } catch (error) {
      await sink.abort();
      throw error;
    }
  });
}

/** A Fastify 5 app with @fastify/multipart answering POST / with `handler`, on loopback: its port. */
async function startFastify(
  handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
): Promise<number> {
  // Each peer loads only its own framework: another's modules would weigh on its memory figures.
  const { default: Fastify } = await import('fastify');
  const { default: fastifyMultipart } = await import('@fastify/multipart');
  const app = Fastify({ logger: false });
  await app.register(fastifyMultipart);
  app.post('/', handler);
  await app.listen({ port: 0, host: '127.0.0.1' });
  track(app.server);
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

/** The file as multer hands it to a storage engine, with the sink this engine adds. */
type SinkFile = Express.Multer.File & { sink?: DiskSink };

/**
 * Express 5 + multer with a storage engine that streams into the DiskSink: multer's own
 * diskStorage writes through fs.createWriteStream, which would make the disk work differ.
 */
export async function expressServer(out: string): Promise<number> {
  const { default: express } = await import('express');
  const { default: multerOf } = await import('multer');
  const storage: multer.StorageEngine = {
    _handleFile(_req, file, callback) {
      const sink = new CountedSink(out);
      pipeToSink(file.stream, sink).then(
        () => callback(null, { sink, size: sink.bytes } as Partial<SinkFile>),
        (error: unknown) => void sink.abort().finally(() => callback(error as Error)),
      );
    },
    _removeFile(_req, file, callback) {
      void ((file as SinkFile).sink?.abort() ?? Promise.resolve()).finally(() => callback(null));
    },
  };
  const app = express();
  app.post('/', multerOf({ storage }).single('result_pv'), async (req, res) => {
    const file = req.file as SinkFile | undefined;
    if (!file?.sink) throw new Error('no file part');
    try {
      const id = await commit(file.sink, out, (req.body as Record<string, unknown>).id_gen, file.mimetype);
      sendJson(res, 200, answer(id));
    } catch (error) {
      await file.sink.abort();
      throw error;
    }
  });
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    sendJson(res, 500, JSON.stringify({ error: error.message }));
  });
  // What app.listen() does, with the request counter attached before the first request.
  const server = createServer(app);
  track(server);
  return listen(server);
}

/** Hono + @hono/node-server: `c.req.parseBody()` (the body in memory), then the file into the sink. */
export async function hono(out: string): Promise<number> {
  const { Hono } = await import('hono');
  const { serve } = await import('@hono/node-server');
  const app = new Hono();
  app.post('/', async (c) => {
    const body = await c.req.parseBody();
    const file = body.result_pv;
    if (!(file instanceof File)) throw new Error('no file part');
    const sink = new CountedSink(out);
    try {
      const pending = sink.write(Buffer.from(await file.arrayBuffer()));
      if (pending) await pending;
      const id = await commit(sink, out, body.id_gen, file.type);
      return c.body(answer(id), 200, { 'content-type': 'application/json; charset=utf-8' });
    } catch (error) {
      await sink.abort();
      throw error;
    }
  });
  app.onError((error, c) => c.json({ error: error.message }, 500, { connection: 'close' }));
  return new Promise<number>((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port));
    track(server as Server);
  });
}

/**
 * Parses a request with busboy: resolves its fields once the body is parsed and `store`, given
 * the `result_pv` file's stream, has finished with it (other files are drained); rejects when
 * parsing or storing fails, or the request is cut off.
 */
async function parseWithBusboy(
  busboy: typeof Busboy,
  req: IncomingMessage,
  store: (stream: Readable, info: FileInfo) => Promise<void>,
): Promise<Map<string, string>> {
  const fields = new Map<string, string>();
  let file: Promise<void> | null = null;
  await new Promise<void>((resolve, reject) => {
    const parser = busboy({ headers: req.headers });
    parser.on('field', (name, value) => fields.set(name, value));
    parser.on('file', (name, stream, info) => {
      if (name !== 'result_pv' || file) return void stream.resume();
      file = store(stream, info);
      file.catch(reject);
    });
    parser.once('error', reject);
    parser.once('close', resolve);
    req.once('close', () => {
      if (!req.complete) reject(new Error('the request was aborted'));
    });
    req.pipe(parser);
  });
  if (!file) throw new Error('no file part');
  await file;
  return fields;
}

/** A plain streaming receiver: node:http, busboy, the file piped into the sink. */
export async function busboyServer(out: string): Promise<number> {
  const { default: busboy } = await import('busboy');
  const server = createServer((req, res) => {
    const sink = new CountedSink(out);
    let mediaType = '';
    parseWithBusboy(busboy, req, (stream, info) => {
      mediaType = info.mimeType;
      return pipeToSink(stream, sink);
    })
      .then(async (fields) => {
        sendJson(res, 200, answer(await commit(sink, out, fields.get('id_gen'), mediaType)));
      })
      .catch(async (error: unknown) => {
        await sink.abort();
        sendJson(res, 500, JSON.stringify({ error: String(error) }));
      });
  });
  track(server);
  return listen(server);
}

/** Flushes a file or directory to disk. */
async function fsyncPath(path: string, flags: string): Promise<void> {
  const handle = await open(path, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A temporary name in `out` for a file written the usual way (`clean` counts what is left). */
const incomingIn = (out: string) => join(out, `.incoming-${randomBytes(12).toString('hex')}.part`);

/**
 * Makes a file that a receiver as usually written has stored at `temp` as durable as the
 * sink's: fsync, atomic rename to `<id_gen><ext>`, directory fsync.
 */
async function commitWritten(temp: string, out: string, idGen: unknown, ext: string, bytes: number) {
  if (typeof idGen !== 'string' || idGen === '') throw new Error('no id_gen before the file');
  await fsyncPath(temp, 'r+');
  await rename(temp, join(out, `${fileNameFor(idGen)}${ext}`));
  await fsyncPath(out, 'r');
  counts.stored++;
  counts.storedBytes += bytes;
  return idGen;
}

/**
 * busboy as a receiver is usually written, its file stream piped into fs.createWriteStream (as
 * in busboy's own README), made as durable as ours: fsync, atomic rename, directory fsync. The
 * other peers store through the project's DiskSink, which compares parsers; this one compares
 * receivers as they are built.
 */
export async function busboyFsServer(out: string): Promise<number> {
  const { default: busboy } = await import('busboy');
  const server = createServer((req, res) => {
    work.busy++;
    const temp = incomingIn(out);
    let stored = 0;
    parseWithBusboy(busboy, req, (stream) => {
      stream.on('data', (chunk: Buffer) => {
        stored += chunk.length;
      });
      return pipeline(stream, createWriteStream(temp, { flags: 'wx' }));
    })
      .then(async (fields) => {
        sendJson(res, 200, answer(await commitWritten(temp, out, fields.get('id_gen'), '.mp4', stored)));
      })
      .catch(async (error: unknown) => {
        await unlink(temp).catch(() => {});
        sendJson(res, 500, JSON.stringify({ error: String(error) }));
      })
      .finally(() => work.busy--);
  });
  track(server);
  return listen(server);
}

/**
 * Fastify 5 + @fastify/multipart as its README stores a file (`pipeline(data.file,
 * fs.createWriteStream(…))`), made as durable as ours like busboy-fs.
 */
export async function fastifyFs(out: string): Promise<number> {
  return startFastify(async (request, reply) => {
    const data = await request.file();
    if (!data) throw new Error('no file part');
    work.busy++;
    const temp = incomingIn(out);
    try {
      const file = createWriteStream(temp, { flags: 'wx' });
      await pipeline(data.file, file);
      if (data.file.truncated) throw new Error('the file was truncated');
      const idGen = fieldValue(data.fields, 'id_gen');
      const id = await commitWritten(temp, out, idGen, '.jpg', file.bytesWritten);
      return reply.header('content-type', 'application/json; charset=utf-8').send(answer(id));
    } catch (error) {
      await unlink(temp).catch(() => {});
      throw error;
    } finally {
      work.busy--;
    }
  });
}

/**
 * Express 5 + multer with its own `diskStorage` (fs.createWriteStream), made as durable as ours
 * like busboy-fs. Counted as busy until multer and the handler are done, removals included.
 */
export async function expressFsServer(out: string): Promise<number> {
  const { default: express } = await import('express');
  const { default: multerOf } = await import('multer');
  const upload = multerOf({
    storage: multerOf.diskStorage({
      destination: out,
      filename: (_req, _file, callback) => callback(null, basename(incomingIn(out))),
    }),
  }).single('result_pv');
  const app = express();
  app.post('/', (req: Request, res: Response) => {
    work.busy++;
    upload(req, res, (error: unknown) => {
      const file = req.file;
      const store = async () => {
        if (error) throw error;
        if (!file) throw new Error('no file part');
        return commitWritten(file.path, out, (req.body as Record<string, unknown>).id_gen, '.jpg', file.size);
      };
      store()
        .then((id) => sendJson(res, 200, answer(id)))
        .catch(async (failure: unknown) => {
          if (file) await unlink(file.path).catch(() => {});
          sendJson(res, 500, JSON.stringify({ error: String(failure) }));
        })
        .finally(() => work.busy--);
    });
  });
  const server = createServer(app);
  track(server);
  return listen(server);
}
