// Lint rules for the whole project: ESLint's and typescript-eslint's recommended sets, type
// imports kept as `import type` (verbatimModuleSyntax), and Node built-ins by `node:` name.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const NODE_BUILTIN_BY_BARE_NAME = {
  regex:
    '^(assert|buffer|child_process|crypto|dns|events|fs|http|https|net|os|path|stream|tls|url|util|zlib)(/.*)?$',
  message: 'import Node built-ins by their node: name',
};

export default tseslint.config(
  { ignores: ['node_modules/', 'coverage/', 'test-artifacts/', '.tmp/', '.data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': [
        'error',
        {
          patterns: [NODE_BUILTIN_BY_BARE_NAME],
        },
      ],
      'no-control-regex': 'off',
    },
  },
  {
    files: ['src/protocol/**/*.ts'],
    rules: {
      // The protocol layer depends on nothing else of ours.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^\\.\\./(?!protocol/)', message: 'src/protocol imports nothing outside itself' },
          ],
        },
      ],
    },
  },
  {
    // send and check ship in a package with no runtime dependencies, which the server's
    // package depends on: Node built-ins and the protocol only, nothing of the server's.
    files: ['src/cli/{send,check,conformance-cases,tls-error,post-callback,post-error,post-exchange}.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NODE_BUILTIN_BY_BARE_NAME,
            { regex: '^undici(/.*)?$', message: 'send and check use node:http, with no dependencies' },
            {
              regex: '^\\.\\./(delivery|service|store)/',
              message: 'the server side depends on the CLI, not back',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['bin/mediahook', '**/*.mjs', '**/*.js'],
    languageOptions: { sourceType: 'module' },
  },
);
