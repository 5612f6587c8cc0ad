import { mkdir, rm } from 'node:fs/promises';
import { runFfmpeg } from './ffmpeg-binary.ts';
import type { GeneratedMedia, GenerateOptions, GenerationRequest } from './generator.ts';
import { outputPathFor, throwIfAborted } from './generator.ts';
import { checkGeneratedFile } from './output-check.ts';
import { PromptScene } from './prompt-scene.ts';

export interface ImageSettings {
  /** Pixels; default 640×360. */
  width?: number;
  height?: number;
  /** ffmpeg's JPEG quality scale, 2 (best) to 31 (smallest). Default 3. */
  quality?: number;
  /** ffmpeg is killed after this long. Default 60 s. */
  timeoutMs?: number;
  /** An ffmpeg binary to use instead of the one found on PATH or in the installer package. */
  ffmpegPath?: string;
}

/** What a built-in picture shows under the prompt. */
export function captionOf(request: GenerationRequest): string {
  return `mediahook ${request.id_gen}`;
}

/**
 * Makes a JPEG that shows the prompt over a gradient: the picture is drawn in memory with the
 * embedded font and encoded by ffmpeg from raw RGB on its stdin. Writes `<workDir>/<id_gen>.jpg`.
 *
 * @example
 * const media = await renderPromptImage({ id_gen: 'x', kind: 'image', family: 'A', prompt: 'a red fox' }, { workDir });
 */
export async function renderPromptImage(
  request: GenerationRequest,
  options: GenerateOptions,
  settings: ImageSettings = {},
): Promise<GeneratedMedia> {
  throwIfAborted(options.signal);
  const width = settings.width ?? 640;
  const height = settings.height ?? 360;
  const scene = new PromptScene(
    { text: request.prompt, caption: captionOf(request), seed: request.id_gen },
    width,
    height,
  );
  const output = outputPathFor(options.workDir, request);
  await mkdir(options.workDir, { recursive: true });
  try {
    await runFfmpeg({
      args: [
        ...['-v', 'error', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${width}x${height}`, '-i', 'pipe:0'],
        ...['-frames:v', '1', '-q:v', String(settings.quality ?? 3), '-f', 'mjpeg', '-y', output],
      ],
      input: scene.render(null),
      timeoutMs: settings.timeoutMs ?? 60_000,
      signal: options.signal,
      binaryPath: settings.ffmpegPath,
    });
    return await checkGeneratedFile(output, 'image', 'ffmpeg');
  } catch (error) {
    await rm(output, { force: true });
    throw error;
  }
}
