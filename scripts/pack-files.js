// Before `npm pack` of a package (run in its directory): the repository's LICENSE, and for
// `mediahook` the repository's README, copied in. A README link that leaves the package is
// rewritten so that it resolves from the tarball: into its own files, to another package's
// npm page, or else to plain text.
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = join(ROOT, 'packages');
const here = process.cwd();
const { name } = JSON.parse(readFileSync('package.json', 'utf8'));

copyFileSync(join(ROOT, 'LICENSE'), 'LICENSE');
if (name === 'mediahook') writeFileSync('README.md', packedReadme(join(ROOT, 'README.md')));

/** The README at `source` with every relative link made to resolve from this package. */
function packedReadme(source) {
  const text = readFileSync(source, 'utf8');
  return text.replace(/\[([^\]]+)\]\(([^)#\s]+)(#[^)\s]*)?\)/g, (link, label, target, anchor = '') => {
    if (/^[a-z]+:/i.test(target)) return link;
    const path = resolve(dirname(source), target);
    if (path.startsWith(here + sep))
      return `[${label}](${relative(here, path).split(sep).join('/')}${anchor})`;
    const other = path.startsWith(PACKAGES + sep)
      ? join(PACKAGES, relative(PACKAGES, path).split(sep)[0])
      : null;
    if (other && existsSync(join(other, 'package.json'))) {
      const { name: otherName } = JSON.parse(readFileSync(join(other, 'package.json'), 'utf8'));
      return `[${label}](https://www.npmjs.com/package/${otherName})`;
    }
    return label;
  });
}
