import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { defineConfig } from 'vitest/config';

// The tests run the packages' sources: each package name resolves as the repository-wide
// tsconfig.json maps it for the type check, so that both agree on where an import leads.
const tsconfig = fileURLToPath(new URL('./tsconfig.json', import.meta.url));
const { config } = ts.readConfigFile(tsconfig, (path) => readFileSync(path, 'utf8')) as {
  config: { compilerOptions: { paths: Record<string, [string]> } };
};
const alias = Object.entries(config.compilerOptions.paths).map(([name, [target]]) => ({
  find: new RegExp(`^${name.replace(/[/.]/g, '\\$&')}$`),
  replacement: fileURLToPath(new URL(target, import.meta.url)),
}));

export default defineConfig({
  resolve: { alias },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
