// The packages' entry points, read from each package.json's `exports` (the one list). From it
// come the repository-wide tsconfig.json `paths` (which the tests resolve through), each
// package's `typesVersions` (types for `moduleResolution: node10`) and knip's entries.
// `node scripts/entry-points.js` checks that the first two agree with `exports`; `--write`
// rewrites them.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const PACKAGE_DIRS = ['packages/mediahook', 'packages/server'];

/**
 * Every entry of every package: its import specifier, its subpath in `exports`, its source file
 * (relative to the package) and its built types.
 */
export function entryPoints() {
  return PACKAGE_DIRS.flatMap((dir) => {
    const { name, exports } = readJson(join(dir, 'package.json'));
    return Object.entries(exports)
      .filter(([, target]) => typeof target === 'object')
      .map(([subpath, target]) => ({
        dir,
        packageName: name,
        subpath,
        specifier: subpath === '.' ? name : `${name}/${subpath.slice(2)}`,
        source: sourceOf(target.default),
        types: target.types,
      }));
  });
}

/** The sources of a package's commands (its `bin`). */
export function binSources(dir) {
  return Object.values(readJson(join(dir, 'package.json')).bin ?? {}).map(sourceOf);
}

/** The source a built file is compiled from: `./dist/a/b.js` from `src/a/b.ts`. */
function sourceOf(built) {
  return built.replace(/^(\.\/)?dist\//, 'src/').replace(/\.js$/, '.ts');
}

/** tsconfig.json's `paths`: each specifier to its source, from the repository's root. */
function pathsOf(entries) {
  return Object.fromEntries(entries.map((entry) => [entry.specifier, [`./${entry.dir}/${entry.source}`]]));
}

/** A package's `typesVersions`: each subpath but the root to its types, for node10 resolution. */
function typesVersionsOf(entries) {
  const subpaths = entries.filter((entry) => entry.subpath !== '.');
  return { '*': Object.fromEntries(subpaths.map((entry) => [entry.subpath.slice(2), [entry.types]])) };
}

function readJson(path) {
  return JSON.parse(readFileSync(join(ROOT, path), 'utf8'));
}

const TSCONFIG = 'tsconfig.json';
// tsconfig.json keeps its comments: only its `paths` object is rewritten, one line per entry.
const PATHS_BLOCK = /("paths": )\{[^}]*\}/;

function tsconfigPaths(text) {
  const block = PATHS_BLOCK.exec(text);
  if (!block) throw new Error(`${TSCONFIG} has no "paths"`);
  return JSON.parse(block[0].slice(block[1].length));
}

function withPaths(text, paths) {
  const lines = Object.entries(paths).map(
    ([name, target]) => `      ${JSON.stringify(name)}: ${JSON.stringify(target)}`,
  );
  return text.replace(PATHS_BLOCK, `$1{\n${lines.join(',\n')}\n    }`);
}

/** The manifest with its `typesVersions` replaced, or placed right after `exports`. */
function withTypesVersions(manifest, typesVersions) {
  if ('typesVersions' in manifest) return { ...manifest, typesVersions };
  return Object.fromEntries(
    Object.entries(manifest).flatMap((field) =>
      field[0] === 'exports' ? [field, ['typesVersions', typesVersions]] : [field],
    ),
  );
}

function sync(write) {
  const entries = entryPoints();
  const stale = [];
  const tsconfigText = readFileSync(join(ROOT, TSCONFIG), 'utf8');
  const paths = pathsOf(entries);
  if (JSON.stringify(tsconfigPaths(tsconfigText)) !== JSON.stringify(paths)) {
    stale.push(`${TSCONFIG} "paths"`);
    if (write) writeFileSync(join(ROOT, TSCONFIG), withPaths(tsconfigText, paths));
  }
  for (const dir of PACKAGE_DIRS) {
    const file = join(dir, 'package.json');
    const manifest = readJson(file);
    const typesVersions = typesVersionsOf(entries.filter((entry) => entry.dir === dir));
    if (JSON.stringify(manifest.typesVersions) !== JSON.stringify(typesVersions)) {
      stale.push(`${file} "typesVersions"`);
      if (write)
        writeFileSync(
          join(ROOT, file),
          `${JSON.stringify(withTypesVersions(manifest, typesVersions), null, 2)}\n`,
        );
    }
  }
  return stale;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const write = process.argv.includes('--write');
  const stale = sync(write);
  if (stale.length > 0 && !write) {
    console.error(
      `Not derived from the packages' "exports": ${stale.join(', ')}.\n` +
        'Run `node scripts/entry-points.js --write`.',
    );
    process.exitCode = 1;
  } else if (stale.length > 0) {
    console.log(`Rewrote ${stale.join(', ')}.`);
  }
}
