// Lint rules for the whole project: ESLint's and typescript-eslint's recommended sets, type
// imports kept as `import type` (verbatimModuleSyntax), and Node built-ins by `node:` name.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const NODE_BY_NAME = {
  regex:
    '^(assert|buffer|child_process|crypto|dns|events|fs|http|https|module|net|os|path|process|stream|timers|tls|url|util|worker_threads|zlib)(/.*)?$',
  message: 'import Node built-ins by their node: name',
};

// The server uses mediahook as its users do, by package name.
const BY_PACKAGE_NAME = { regex: '(^|/)mediahook/src/', message: 'import mediahook by its package name' };

export default tseslint.config(
  { ignores: ['node_modules/', 'packages/*/dist/', 'coverage/', 'test-artifacts/', '.tmp/', '.data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': ['error', { patterns: [NODE_BY_NAME] }],
      'no-control-regex': 'off',
    },
  },
  {
    files: ['packages/mediahook/src/**/*.ts'],
    rules: {
      // The receiver's package depends on nothing: not on the server's, nor on any framework.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NODE_BY_NAME,
            { regex: '^(?!node:|\\.)', message: 'mediahook has no dependencies: Node built-ins only' },
            { regex: '(^|/)server/', message: 'mediahook does not reach into the server package' },
          ],
        },
      ],
    },
  },
  {
    files: ['packages/mediahook/src/protocol/**/*.ts'],
    rules: {
      // The protocol layer depends on nothing else of ours.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NODE_BY_NAME,
            { regex: '^\\.\\./(?!protocol/)', message: 'the protocol imports nothing outside itself' },
            { regex: '^[^.n]', message: 'the protocol imports Node built-ins only' },
          ],
        },
      ],
    },
  },
  {
    files: ['packages/server/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [NODE_BY_NAME, BY_PACKAGE_NAME],
        },
      ],
    },
  },
  {
    files: ['packages/server/src/client/**/*.ts'],
    rules: {
      // The typed client runs wherever fetch does (browsers, Deno, Bun): nothing but itself.
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!\\./)', message: 'the client imports nothing outside its folder' }] },
      ],
    },
  },
  {
    files: ['packages/server/src/store/*.ts'],
    ignores: ['packages/server/src/store/index.ts', 'packages/server/src/store/open-store.ts'],
    rules: {
      // The store's core is the same on every database: it reaches one only through StoreDialect.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NODE_BY_NAME,
            BY_PACKAGE_NAME,
            { regex: '^\\./[^/]+/', message: "the store's core imports no database's folder" },
          ],
        },
      ],
    },
  },
  {
    files: ['packages/server/src/store/*/*.ts'],
    rules: {
      // A database's folder builds on the core, never on another database's folder.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NODE_BY_NAME,
            BY_PACKAGE_NAME,
            { regex: '^\\.\\./[^/]+/', message: "a database's folder imports no other database's" },
          ],
        },
      ],
    },
  },
  {
    files: ['packages/*/test/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['bin/mediahook', 'scripts/*.js', '**/*.mjs', '**/*.js'],
    languageOptions: { sourceType: 'module' },
  },
  {
    // The dashboard's scripts run in the browser as one classic script, after the shared page
    // text: names cross files, which their type check (browser/tsconfig.json) follows and
    // ESLint, one file at a time, cannot.
    files: ['packages/server/src/web/browser/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser } },
    rules: { 'no-undef': 'off', '@typescript-eslint/no-unused-vars': 'off' },
  },
);
