// Builds the package in the working directory: dist/ emptied, then compiled by its
// tsconfig.build.json, the browser scripts (src/**/browser/*.js, which tsc leaves out) copied as
// they are, and the bin made executable (npm does it on install, a clone needs it).
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

rmSync('dist', { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
for (const entry of readdirSync('src', { recursive: true })) {
  const path = String(entry).split('\\').join('/');
  if (/(^|\/)browser\/[^/]+\.js$/.test(path)) cpSync(`src/${path}`, `dist/${path}`);
}
const { bin = {} } = JSON.parse(readFileSync('package.json', 'utf8'));
for (const file of Object.values(bin)) chmodSync(file, 0o755);
