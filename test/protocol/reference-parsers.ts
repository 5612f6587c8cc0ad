/**
 * Two independent multipart parsers (busboy and @fastify/busboy) reduced to one plain view,
 * so a body can be read three ways and the readings compared.
 */
import { Busboy as FastifyBusboy } from '@fastify/busboy';
import busboy from 'busboy';
import type { Decoded } from './decode-harness.ts';

/** What a form-data body says: text fields and files by part name. */
export interface FormView {
  fields: Record<string, string>;
  files: Record<string, { filename: string | undefined; mimeType: string | null; content: string }>;
}

type Listen = (
  onField: (name: string, value: string) => void,
  onFile: (
    name: string,
    stream: NodeJS.ReadableStream,
    filename: string | undefined,
    mimeType: string,
  ) => void,
) => NodeJS.WritableStream & { on(event: string, listener: (...args: unknown[]) => void): unknown };

async function parseWith(listen: Listen, doneEvent: string, chunks: Iterable<Uint8Array>): Promise<FormView> {
  const view: FormView = { fields: {}, files: {} };
  const pendingFiles: Promise<void>[] = [];
  const parser = listen(
    (name, value) => {
      view.fields[name] = value;
    },
    (name, stream, filename, mimeType) => {
      const parts: Buffer[] = [];
      pendingFiles.push(
        new Promise((resolve, reject) => {
          stream.on('data', (data: Buffer) => parts.push(data));
          stream.on('error', reject);
          stream.on('end', () => {
            view.files[name] = { filename, mimeType, content: Buffer.concat(parts).toString('hex') };
            resolve();
          });
        }),
      );
    },
  );
  const finished = new Promise<void>((resolve, reject) => {
    parser.on(doneEvent, () => resolve());
    parser.on('error', (error) => reject(error));
  });
  for (const chunk of chunks) parser.write(chunk);
  parser.end();
  await finished;
  await Promise.all(pendingFiles);
  return view;
}

export function parseWithBusboy(contentType: string, chunks: Iterable<Uint8Array>): Promise<FormView> {
  return parseWith(
    (onField, onFile) => {
      // UTF-8 for parameters too: busboy reads filenames as latin1 unless told otherwise.
      const parser = busboy({ headers: { 'content-type': contentType }, defParamCharset: 'utf8' });
      parser.on('field', (name, value) => onField(name, value));
      parser.on('file', (name, stream, info) => onFile(name, stream, info.filename, info.mimeType));
      return parser;
    },
    'close',
    chunks,
  );
}

export function parseWithFastifyBusboy(contentType: string, chunks: Iterable<Uint8Array>): Promise<FormView> {
  return parseWith(
    (onField, onFile) => {
      const parser = new FastifyBusboy({ headers: { 'content-type': contentType } });
      parser.on('field', (name: string, value: string) => onField(name, value));
      parser.on(
        'file',
        (name: string, stream: NodeJS.ReadableStream, filename: string, _enc: string, mime: string) =>
          onFile(name, stream, filename, mime),
      );
      return parser;
    },
    'finish',
    chunks,
  );
}

/** The same view of a callback our decoder produced. */
export function viewOf(callback: Decoded): FormView {
  const view: FormView = {
    fields: { status: callback.status, id_gen: callback.id_gen, time_gen: callback.time_gen },
    files: {},
  };
  if (callback.event === 'error') {
    view.fields[callback.family === 'A' ? 'message' : 'img_message'] = callback.message;
  } else {
    const { part, filename, declaredType, content } = callback.file;
    view.files[part] = { filename, mimeType: declaredType, content };
  }
  return view;
}
