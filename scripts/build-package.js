// Builds the package in the working directory: dist/ emptied, then compiled by its
// tsconfig.build.json, and the bin made executable (npm does it on install, a clone needs it).
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

rmSync('dist', { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
const { bin = {} } = JSON.parse(readFileSync('package.json', 'utf8'));
for (const file of Object.values(bin)) chmodSync(file, 0o755);
