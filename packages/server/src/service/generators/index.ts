/**
 * The generators of the service: what makes the JPEG or MP4 of an operation. One small
 * interface ({@link Generator}), a built-in generator that draws the prompt, a command
 * generator that runs any program, and a concurrency limit.
 */

export { BuiltinGenerator, builtInGenerator } from './builtin-generator.ts';
export {
  CommandGenerator,
  type CommandGeneratorOptions,
  type CommandInput,
  commandGenerator,
} from './command-generator.ts';
export { limitConcurrency, Semaphore } from './concurrency-limit.ts';
export { FFMPEG_PATH_ENV, ffmpegBinary, findFfmpegBinary, runFfmpeg } from './ffmpeg-binary.ts';
export { GenerationError, type GenerationErrorCode, isGenerationError } from './generation-error.ts';
export { type GeneratedMedia, type GenerationRequest, type Generator, mediaTypeOf } from './generator.ts';
export { renderPromptImage } from './image-generator.ts';
export { PromptScene } from './prompt-scene.ts';
export { renderPromptVideo } from './video-generator.ts';
