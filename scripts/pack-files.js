// Before `npm pack` of a package (run in its directory): the repository's LICENSE, and for
// `mediahook` the repository's README, copied in, written for package users: no Development
// section, and every link that leaves the package made absolute (another package's npm page,
// else the file on GitHub). The CHANGELOG's "Unreleased" section is shipped under the
// package's version; `--restore` (after packing) puts the repository's CHANGELOG back.
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = join(ROOT, 'packages');
const REPOSITORY_FILES = 'https://github.com/mediahook/mediahook/blob/main/';
const CHANGELOG = 'CHANGELOG.md';
// The repository's CHANGELOG while the packed one is in its place (not a packed file).
const CHANGELOG_SOURCE = '.changelog-source.md';
const UNRELEASED = /^## Unreleased$/m;
const here = process.cwd();

if (existsSync(CHANGELOG_SOURCE)) renameSync(CHANGELOG_SOURCE, CHANGELOG);
if (!process.argv.includes('--restore')) {
  const { name, version } = JSON.parse(readFileSync('package.json', 'utf8'));
  copyFileSync(join(ROOT, 'LICENSE'), 'LICENSE');
  if (name === 'mediahook') writeFileSync('README.md', packedReadme(join(ROOT, 'README.md')));
  const changelog = readFileSync(CHANGELOG, 'utf8');
  if (UNRELEASED.test(changelog)) {
    const released = releasedChangelog(changelog, version);
    copyFileSync(CHANGELOG, CHANGELOG_SOURCE);
    writeFileSync(CHANGELOG, released);
  }
}

/** The changelog with its "Unreleased" section named by `version`, which must be new. */
function releasedChangelog(text, version) {
  if (new RegExp(`^## ${version.replaceAll('.', '\\.')}$`, 'm').test(text)) {
    throw new Error(
      `${CHANGELOG} has a section for ${version} already: raise the version to pack what is unreleased`,
    );
  }
  return text.replace(UNRELEASED, `## ${version}`);
}

/** The README at `source` for package users: links resolve from the tarball, no Development. */
function packedReadme(source) {
  const text = readFileSync(source, 'utf8').replace(/^## Development\n[\s\S]*?(?=^## |(?![\s\S]))/m, '');
  return text.replace(/\[([^\]]+)\]\(([^)#\s]+)(#[^)\s]*)?\)/g, (link, label, target, anchor = '') => {
    if (/^[a-z]+:/i.test(target)) return link;
    const path = resolve(dirname(source), target);
    if (path.startsWith(here + sep)) {
      // A link that shows its own path shows the one it has inside the package.
      const inside = relative(here, path).split(sep).join('/');
      return `[${label === target ? inside : label}](${inside}${anchor})`;
    }
    const other = path.startsWith(PACKAGES + sep)
      ? join(PACKAGES, relative(PACKAGES, path).split(sep)[0])
      : null;
    if (other && path === join(other, 'README.md')) {
      const { name: otherName } = JSON.parse(readFileSync(join(other, 'package.json'), 'utf8'));
      return `[${label === target ? otherName : label}](https://www.npmjs.com/package/${otherName})`;
    }
    return `[${label}](${REPOSITORY_FILES}${relative(ROOT, path).split(sep).join('/')}${anchor})`;
  });
}
