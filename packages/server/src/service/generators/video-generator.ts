import { mkdir, rm } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { runFfmpeg } from './ffmpeg-binary.ts';
import type { GeneratedMedia, GenerateOptions, GenerationRequest } from './generator.ts';
import { outputPathFor, throwIfAborted } from './generator.ts';
import { captionOf } from './image-generator.ts';
import { checkGeneratedFile } from './output-check.ts';
import { writeWithBackpressure } from './process-runner.ts';
import { PromptScene } from './prompt-scene.ts';

export interface VideoSettings {
  /** Pixels, both even (yuv420p halves the colour planes). Default 640×360. */
  width?: number;
  height?: number;
  /** Default 3 s at 25 frames a second. */
  seconds?: number;
  fps?: number;
  /** libx264's speed/size trade-off. Default `veryfast`. */
  preset?: string;
  /** ffmpeg is killed after this long. Default 120 s. */
  timeoutMs?: number;
  /** An ffmpeg binary to use instead of the one found on PATH or in the installer package. */
  ffmpegPath?: string;
}

/**
 * Makes an H.264 MP4 that shows the prompt over moving waves and a drifting glow, with a progress
 * bar: frames are drawn in memory and streamed to ffmpeg's stdin as raw RGB, one at a time and
 * only as fast as ffmpeg takes them. The file is yuv420p with the index at the front
 * (`+faststart`), so browsers play it while it downloads. Writes `<workDir>/<id_gen>.mp4`.
 *
 * @example
 * const media = await renderPromptVideo({ id_gen: 'x', kind: 'video', family: 'A', prompt: 'waves' }, { workDir });
 */
export async function renderPromptVideo(
  request: GenerationRequest,
  options: GenerateOptions,
  settings: VideoSettings = {},
): Promise<GeneratedMedia> {
  throwIfAborted(options.signal);
  const width = settings.width ?? 640;
  const height = settings.height ?? 360;
  const fps = settings.fps ?? 25;
  const frameCount = Math.max(1, Math.round((settings.seconds ?? 3) * fps));
  if (width % 2 !== 0 || height % 2 !== 0)
    throw new RangeError(`video dimensions must be even, not ${width}×${height}`);
  const scene = new PromptScene(
    { text: request.prompt, caption: captionOf(request), seed: request.id_gen },
    width,
    height,
  );
  const output = outputPathFor(options.workDir, request);
  await mkdir(options.workDir, { recursive: true });

  const writeFrames = async (stdin: Writable) => {
    for (let frame = 0; frame < frameCount && !options.signal?.aborted; frame++) {
      await writeWithBackpressure(stdin, scene.render(frame / frameCount, (frame + 1) / frameCount));
    }
  };
  try {
    await runFfmpeg({
      args: [
        ...[
          '-v',
          'error',
          '-f',
          'rawvideo',
          '-pix_fmt',
          'rgb24',
          '-s',
          `${width}x${height}`,
          '-r',
          String(fps),
        ],
        ...['-i', 'pipe:0', '-an', '-c:v', 'libx264', '-preset', settings.preset ?? 'veryfast'],
        ...['-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-f', 'mp4', '-y', output],
      ],
      input: writeFrames,
      timeoutMs: settings.timeoutMs ?? 120_000,
      signal: options.signal,
      binaryPath: settings.ffmpegPath,
    });
    return await checkGeneratedFile(output, 'video', 'ffmpeg');
  } catch (error) {
    await rm(output, { force: true });
    throw error;
  }
}
