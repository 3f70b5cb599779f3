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
  // Times as text through src/core/iso-time.ts, not Date: Date's first conversion loads the time zone for the agent's
  // life (~0.45 MiB in the agent, issue 31). smol-toml's own dates (a TomlDate spells itself) are the one exception,
  // said where used. A Date handed to a library (a cookie's Expires) is the other way in: reviews, not this rule.
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "CallExpression[callee.property.name=/^(toISOString|toUTCString|toJSON)$/][callee.object.callee.name='Date']",
          message:
            'isoTime(ms) or httpDate(ms) from src/core/iso-time.ts: Date loads the time zone for good (issue 31).',
        },
        {
          selector: "MemberExpression[property.name='stdTimeFunctions']",
          message: "pino's time functions format through Date: use isoTime (src/log/logger.ts).",
        },
      ],
    },
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
