import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import {
  boundaryOf,
  DEFAULT_LIMITS,
  MultipartParser,
  parseHeaderValue,
  ProtocolError,
} from 'mediahook/protocol';
import type { CallbackInput } from './submit-callback.ts';

const TEXT_PARTS = ['webhook_url', 'family', 'status', 'id_gen', 'time_gen', 'message'] as const;
type TextPart = (typeof TEXT_PARTS)[number];
const FILE_PART = 'result';
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a `multipart/form-data` hand-in (the request's `body`, as its guards let it through) and
 * gives it to `consume` as soon as the file part starts, with the file as a stream that fills
 * while the request is read (at the pace the consumer takes it). Text parts come first, the file
 * last, as in a callback. Malformed bodies and part errors throw the protocol's codes.
 */
export async function readMultipartSubmission<T>(
  req: IncomingMessage,
  body: AsyncIterable<Uint8Array>,
  consume: (input: CallbackInput) => Promise<T>,
): Promise<T> {
  const checked = boundaryOf(req.headers['content-type']);
  if ('error' in checked) throw new ProtocolError(checked.code, checked.error);
  const texts = new Map<TextPart, string>();
  let text: { name: TextPart; chunks: Buffer[]; bytes: number } | null = null;
  let file: PassThrough | null = null;
  let consuming: Promise<T> | null = null;
  let parts = 0;
  let fileDone = false;
  let full = false;
  const parser = new MultipartParser(checked.boundary, {
    onPartBegin(headers) {
      if (++parts > TEXT_PARTS.length + 1) throw new ProtocolError('too_many_parts', 'too many parts');
      if (fileDone) throw new ProtocolError('unexpected_part', 'the result file must be the last part');
      const { name, isFile } = partOf(headers.get('content-disposition'));
      if (name === FILE_PART) {
        if (!isFile)
          throw new ProtocolError('expected_file', 'the result part must be a file (with a filename)');
        for (const needed of ['id_gen', 'family'] as const) {
          if (!texts.has(needed)) {
            throw new ProtocolError('missing_part', `the ${needed} part must come before the result file`);
          }
        }
        file = new PassThrough({ highWaterMark: 256 * 1024 });
        consuming = consume({ ...inputOf(texts), result: file });
        // Its failure is awaited below; until then it must not count as unhandled.
        consuming.catch(() => {});
        return;
      }
      if (!(TEXT_PARTS as readonly string[]).includes(name)) {
        throw new ProtocolError('unexpected_part', `no part is named ${JSON.stringify(name)}`);
      }
      if (isFile) throw new ProtocolError('expected_text', `the ${name} part must be text, not a file`);
      if (texts.has(name as TextPart))
        throw new ProtocolError('duplicate_part', `the ${name} part is repeated`);
      text = { name: name as TextPart, chunks: [], bytes: 0 };
    },
    onPartData(data) {
      if (file && !fileDone) {
        if (!file.write(Buffer.from(data))) full = true;
        return;
      }
      text!.bytes += data.length;
      if (text!.bytes > DEFAULT_LIMITS.textBytes) {
        throw new ProtocolError(
          'text_too_large',
          `the ${text!.name} part is over ${DEFAULT_LIMITS.textBytes} bytes`,
        );
      }
      text!.chunks.push(Buffer.from(data));
    },
    onPartEnd() {
      if (file && !fileDone) {
        fileDone = true;
        file.end();
        return;
      }
      try {
        texts.set(text!.name, UTF8.decode(Buffer.concat(text!.chunks)));
      } catch {
        throw new ProtocolError('invalid_text', `the ${text!.name} part is not UTF-8`);
      }
      text = null;
    },
  });
  try {
    for await (const chunk of body) {
      parser.write(chunk);
      if (full) {
        full = false;
        // The consumer's pace, or its failure: whichever comes first.
        await Promise.race([new Promise((resolve) => file!.once('drain', resolve)), consuming]);
      }
    }
    parser.end();
  } catch (error) {
    (file as PassThrough | null)?.destroy(error as Error);
    await (consuming as Promise<T> | null)?.catch(() => {});
    throw error;
  }
  if (consuming) return consuming;
  return consume(inputOf(texts));
}

function partOf(disposition: string | undefined): { name: string; isFile: boolean } {
  const parsed = disposition === undefined ? null : parseHeaderValue(disposition);
  if (
    parsed === null ||
    typeof parsed === 'string' ||
    parsed.value !== 'form-data' ||
    !parsed.params.has('name')
  ) {
    throw new ProtocolError(
      'malformed_multipart',
      'a part has no Content-Disposition: form-data with a name',
    );
  }
  return {
    name: parsed.params.get('name')!,
    isFile: parsed.params.has('filename') || parsed.params.has('filename*'),
  };
}

function inputOf(texts: Map<TextPart, string>): CallbackInput {
  return {
    webhook_url: texts.get('webhook_url')!,
    family: texts.get('family')!,
    status: texts.get('status'),
    id_gen: texts.get('id_gen')!,
    time_gen: texts.get('time_gen'),
    message: texts.get('message'),
  };
}
