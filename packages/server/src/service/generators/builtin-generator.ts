import type { GeneratedMedia, GenerateOptions, GenerationRequest, Generator } from './generator.ts';
import { failIfRequested } from './generator.ts';
import { type ImageSettings, renderPromptImage } from './image-generator.ts';
import { renderPromptVideo, type VideoSettings } from './video-generator.ts';

interface BuiltinGeneratorOptions {
  image?: ImageSettings;
  video?: VideoSettings;
}

/**
 * The generator the service uses when no model is plugged in: a 640×360 JPEG, or a 3 s H.264
 * MP4, that shows the prompt, drawn with an embedded font and encoded with ffmpeg. `fail_with`
 * makes it fail with exactly that text (code `failed_on_request`) without running anything.
 *
 * @example
 * const generator = new BuiltinGenerator({ video: { seconds: 2 } });
 * const media = await generator.generate(
 *   { id_gen: '0190…', kind: 'video', family: 'A', prompt: 'a red fox' },
 *   { workDir: './data/work' },
 * );
 */
export class BuiltinGenerator implements Generator {
  private readonly options: BuiltinGeneratorOptions;

  constructor(options: BuiltinGeneratorOptions = {}) {
    this.options = options;
  }

  async generate(request: GenerationRequest, options: GenerateOptions): Promise<GeneratedMedia> {
    failIfRequested(request);
    return request.kind === 'video'
      ? renderPromptVideo(request, options, this.options.video)
      : renderPromptImage(request, options, this.options.image);
  }
}

/**
 * The built-in generator ({@link BuiltinGenerator}) as a plain {@link Generator}.
 *
 * @example
 * const service = createService({ store, dataDir: 'data', generator: builtInGenerator() });
 */
export function builtInGenerator(options: BuiltinGeneratorOptions = {}): Generator {
  return new BuiltinGenerator(options);
}
