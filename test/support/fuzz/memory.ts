/**
 * Memory under long bodies: a delimiter-near-miss flood as the preamble, then a valid callback
 * whose file is mostly near misses, streamed through one decoder in 64 KiB chunks. What the
 * decoder holds must not grow with the body: it keeps one header block and one partial
 * delimiter, whatever comes.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CallbackDecoder } from '../../../packages/mediahook/src/protocol/index.ts';

interface MemoryFigures {
  streamedMb: number;
  /** Growth of heap plus buffers while streaming, sampled every 4 MiB; the largest, in MiB. */
  maxGrowthMb: number;
  accepted: boolean;
  seconds: number;
}

const BOUNDARY = 'memory-boundary-0d1f';

/** A full collection before each sample, so the figure is what is held, not garbage yet to go. */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

function used(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

export async function streamMemory(totalMb: number): Promise<MemoryFigures> {
  const started = performance.now();
  // Every piece starts like the delimiter and breaks off: the parser must hold and release it.
  const nearMiss = Buffer.from(`\r\n--${BOUNDARY.slice(0, -1)}x\r\n-\r`, 'latin1');
  const chunk = Buffer.alloc(65536);
  for (let at = 0; at < chunk.length; at += nearMiss.length) nearMiss.copy(chunk, at);
  const head = Buffer.from(
    `\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="status"\r\n\r\nsuccess\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="id_gen"\r\n\r\nmemory\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="time_gen"\r\n\r\nt\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="result_pv"; filename="m.jpg"\r\n\r\n`,
  );
  const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0]);
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const decoder = new CallbackDecoder(`multipart/form-data; boundary=${BOUNDARY}`);
  const gc = collector();
  gc();
  const baseline = used();
  let maxGrowth = 0;
  const chunks = (totalMb * 1024 * 1024) / chunk.length;
  for (let n = 0; n < chunks; n++) {
    // The first half is preamble, the second half the file.
    if (n === chunks / 2) {
      await decoder.write(head);
      await decoder.write(jpeg);
    }
    // A fresh buffer each time, as from a socket: nothing may keep a reference to an old one.
    await decoder.write(Buffer.from(chunk));
    if (n % 64 === 0) {
      gc();
      maxGrowth = Math.max(maxGrowth, used() - baseline);
    }
  }
  await decoder.write(tail);
  const callback = await decoder.end();
  return {
    streamedMb: totalMb,
    maxGrowthMb: Math.round((maxGrowth / 1048576) * 10) / 10,
    accepted:
      callback.event === 'success' && callback.file.bytes === (totalMb / 2) * 1024 * 1024 + jpeg.length,
    seconds: Math.round((performance.now() - started) / 100) / 10,
  };
}
