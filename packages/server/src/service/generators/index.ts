/**
 * The generators of the service: what makes the JPEG or MP4 of an operation. One small
 * interface ({@link Generator}), a built-in generator that draws the prompt, a command
 * generator that runs any program, and a concurrency limit.
 */

export { BuiltinGenerator, type BuiltinGeneratorOptions, builtInGenerator } from './builtin-generator.ts';
export {
  CommandGenerator,
  type CommandGeneratorOptions,
  type CommandInput,
  commandGenerator,
} from './command-generator.ts';
export {
  DEFAULT_GENERATION_CONCURRENCY,
  type LimitedGenerator,
  limitConcurrency,
  Semaphore,
} from './concurrency-limit.ts';
export {
  FFMPEG_PATH_ENV,
  type FfmpegBinary,
  ffmpegBinary,
  findFfmpegBinary,
  type RunFfmpegOptions,
  runFfmpeg,
} from './ffmpeg-binary.ts';
export {
  GENERATION_ERROR_CODES,
  GenerationError,
  type GenerationErrorCode,
  isGenerationError,
} from './generation-error.ts';
export {
  failIfRequested,
  type GeneratedMedia,
  type GenerateOptions,
  type GenerationRequest,
  type Generator,
  mediaTypeOf,
  outputPathFor,
} from './generator.ts';
export { type ImageSettings, renderPromptImage } from './image-generator.ts';
export { checkGeneratedFile } from './output-check.ts';
export { PromptScene, type SceneContent } from './prompt-scene.ts';
export { renderPromptVideo, type VideoSettings } from './video-generator.ts';
