// Lint the TypeScript sources and tests; generated output and fixtures are not ours to lint.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import rooms from './lint/rooms-plugin.mjs';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'dist-bundle/**',
      'dist-deb/**',
      'node_modules/**',
      'coverage/**',
      '.state/**',
      'examples/**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  // Each room of src/ imports only the rooms below it (lint/rooms.mjs; the rule: lint/rooms-plugin.mjs).
  {
    files: ['src/**/*.ts', 'src/**/*.tsx', 'src/**/*.mts', 'src/**/*.cts'],
    plugins: { rooms },
    rules: { 'rooms/import-boundary': 'error' },
  },
  {
    files: ['bin/**/*.js', 'lint/**/*.mjs', 'reliability/**/*.mjs', 'examples/**/*.mjs', 'web/**/*.mjs'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
      },
    },
  },
);
