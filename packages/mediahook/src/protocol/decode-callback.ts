import type { Callback } from './callback-shapes.ts';
import { CallbackDecoder, type DecodeOptions } from './callback-decoder.ts';
import type { FileSink } from './file-sink.ts';

/**
 * Decodes one callback from a body stream (a Node request, any async iterable of bytes).
 * Throws a {@link ProtocolError} for anything the four shapes do not allow; the sink then
 * has been told to abort.
 *
 * @example
 * const callback = await decodeCallback(req, req.headers['content-type']);
 * if (callback.event === 'success') console.log(callback.file.mediaType, callback.file.sha256);
 */
export async function decodeCallback<S extends FileSink = FileSink>(
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  contentType: string | null | undefined,
  options: DecodeOptions<S> = {},
): Promise<Callback<S>> {
  const decoder = new CallbackDecoder<S>(contentType, options);
  try {
    for await (const chunk of body) {
      const pending = decoder.write(chunk);
      if (pending) await pending;
    }
    return await decoder.end();
  } catch (error) {
    await decoder.abort(error);
    throw error;
  }
}
