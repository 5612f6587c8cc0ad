/**
 * Looks at generated files the way a player would: ffmpeg decodes them completely, and what it
 * prints about the stream (codec, size, duration) is parsed.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffmpegBinary } from '../../../src/service/generators/index.ts';
import { runProcess } from '../../../src/service/generators/process-runner.ts';

interface ProbeResult {
  /** Exit code of a full decode (`ffmpeg -i FILE -f null -`); 0 when every frame decoded. */
  exitCode: number | null;
  codec: string | undefined;
  pixelFormat: string | undefined;
  width: number | undefined;
  height: number | undefined;
  /** From `Duration: HH:MM:SS.cc`, in seconds. */
  durationSeconds: number | undefined;
  stderr: string;
}

export async function probeMedia(path: string): Promise<ProbeResult> {
  const ffmpeg = await ffmpegBinary();
  const outcome = await runProcess({
    argv: [ffmpeg.path, '-hide_banner', '-nostdin', '-i', path, '-f', 'null', '-'],
    timeoutMs: 20_000,
    stderrTailBytes: 1 << 20,
  });
  const stderr = outcome.stderrTail;
  // Only the input's description: the output side describes ffmpeg's null encoder.
  const input = stderr.split(/^Stream mapping:|^Output #0/m)[0] ?? '';
  const stream = /Stream #0:0.*?: Video: (.*)/.exec(input)?.[1] ?? '';
  const size = /, (\d+)x(\d+)[ ,]/.exec(stream);
  const duration = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(input);
  return {
    exitCode: outcome.exitCode,
    codec: /^(\w+)/.exec(stream)?.[1],
    pixelFormat: /^\w+[^,]*, (\w+)/.exec(stream)?.[1],
    width: size ? Number(size[1]) : undefined,
    height: size ? Number(size[2]) : undefined,
    durationSeconds: duration
      ? Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3])
      : undefined,
    stderr,
  };
}

/** Decodes a file to raw pixels (all frames, one after another), optionally scaled down first. */
export async function decodePixels(
  path: string,
  options: { pixelFormat: 'rgb24' | 'gray'; scale?: string },
): Promise<Buffer> {
  const ffmpeg = await ffmpegBinary();
  const dir = await mkdtemp(join(tmpdir(), 'mediahook-decode-'));
  const raw = join(dir, 'frames.raw');
  try {
    const outcome = await runProcess({
      argv: [
        ...[ffmpeg.path, '-v', 'error', '-nostdin', '-i', path],
        ...(options.scale ? ['-vf', `scale=${options.scale}`] : []),
        ...['-f', 'rawvideo', '-pix_fmt', options.pixelFormat, '-y', raw],
      ],
      timeoutMs: 20_000,
    });
    if (outcome.exitCode !== 0) throw new Error(`decoding ${path} failed: ${outcome.stderrTail}`);
    return await readFile(raw);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The top-level ISO-BMFF boxes of an MP4, in file order. */
export function topLevelBoxes(file: Buffer): string[] {
  const types: string[] = [];
  for (let offset = 0; offset + 8 <= file.length;) {
    let size = file.readUInt32BE(offset);
    if (size === 1) size = Number(file.readBigUInt64BE(offset + 8));
    types.push(file.toString('latin1', offset + 4, offset + 8));
    if (size < 8) break;
    offset += size;
  }
  return types;
}

export async function temporaryDirectory(): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'mediahook-generators-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}
