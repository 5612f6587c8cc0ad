// knip's view of the repository: each package's entries are its `exports` (read by
// scripts/entry-points.js, as tsconfig.json's paths are), its bin and its tests.
import { binSources, entryPoints } from './scripts/entry-points.js';

const entriesOf = (dir) => [
  ...entryPoints()
    .filter((entry) => entry.dir === dir)
    .map((entry) => entry.source),
  ...binSources(dir),
];

/** @type {import('knip').KnipConfig} */
export default {
  workspaces: {
    '.': {
      entry: [
        'soak/*.ts',
        'soak/*/*.ts',
        'scripts/*.js',
        'examples/*.ts',
        'test/**/*.test.ts',
        'bench/operator-view.ts',
      ],
      project: ['bench/**/*.ts', 'soak/**/*.ts', 'scripts/**/*.js', 'examples/**/*.ts', 'test/**/*.ts'],
      ignoreDependencies: ['mediahook'],
    },
    'packages/mediahook': {
      entry: [...entriesOf('packages/mediahook'), 'test/**/*.test.ts'],
      project: ['src/**/*.ts', 'test/**/*.ts'],
    },
    'packages/server': {
      entry: [...entriesOf('packages/server'), 'test/**/*.test.ts'],
      project: ['src/**/*.ts', 'test/**/*.ts'],
      ignore: ['src/web/browser/**'],
    },
  },
  ignoreBinaries: ['bin/mediahook'],
  ignoreDependencies: ['@arethetypeswrong/cli', 'publint'],
  rules: {
    optionalPeerDependencies: 'off',
  },
};
