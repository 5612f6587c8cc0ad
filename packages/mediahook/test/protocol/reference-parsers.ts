/**
 * Independent multipart parsers (busboy, @fastify/busboy, and werkzeug in Python) reduced to one
 * plain view, so a body can be read several ways and the readings compared.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Busboy as FastifyBusboy } from '@fastify/busboy';
import busboy from 'busboy';
import { type Decoded, decodeWhole } from './decode-harness.ts';
import { pythonWith } from '../python-interpreter.ts';

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
function viewOf(callback: Decoded): FormView {
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

/** Our decoder's reading of a body that must be valid. */
export async function ourView(contentType: string, body: Buffer): Promise<FormView> {
  const outcome = await decodeWhole(contentType, body);
  if (!outcome.ok) throw new Error(`our decoder rejected a valid body: ${outcome.code}`);
  return viewOf(outcome.callback);
}

/** Parsers default a missing part Content-Type differently; only a declared one is compared. */
export function withoutUndeclaredTypes(reference: FormView, ours: FormView): FormView {
  const files = Object.fromEntries(
    Object.entries(reference.files).map(([name, file]) => [
      name,
      ours.files[name]?.mimeType === null ? { ...file, mimeType: null } : file,
    ]),
  );
  return { ...reference, files };
}

const WERKZEUG_SCRIPT = fileURLToPath(new URL('./fixtures/werkzeug-view.py', import.meta.url));

/** The Python with werkzeug (Flask's parser) on this machine, if any. */
const werkzeugPython = pythonWith('werkzeug.formparser');

/** Whether python3 with werkzeug (Flask's parser) is on this machine. */
export function werkzeugAvailable(): boolean {
  return werkzeugPython !== null;
}

type WerkzeugReading = { ok: true; view: FormView } | { ok: false; error: string };

/**
 * Reads bodies with werkzeug, the parser a Flask receiver uses, in one python3 process for the
 * whole list (starting Python per body would dominate the test's time).
 */
export function parseWithWerkzeug(
  bodies: readonly { contentType: string; body: Buffer }[],
): WerkzeugReading[] {
  const input = JSON.stringify(
    bodies.map((b) => ({ contentType: b.contentType, body: b.body.toString('base64') })),
  );
  const run = spawnSync(werkzeugPython ?? 'python3', [WERKZEUG_SCRIPT], {
    input,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`werkzeug-view.py failed (${run.status}): ${run.stderr.toString()}`);
  return JSON.parse(run.stdout.toString()) as WerkzeugReading[];
}
