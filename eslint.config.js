// Lint the TypeScript sources and tests; generated output and fixtures are not ours to lint.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { APART, ROOMS, allowedFrom } from './lint/rooms.mjs';

// Each room of src/ imports only the rooms below it (lint/rooms.mjs): every other room is a restricted import there.
// ESLint sees static imports and re-exports; test/architecture/rooms.test.ts also walks import() and finds circles.
const roomRule = (room) => {
  const others = [...ROOMS, ...APART].filter((r) => r !== room && !allowedFrom(room).includes(r));
  const names = others.map((r) => r.replace(/\.ts$/, '\\.js$')).join('|');
  return {
    files: [room.endsWith('.ts') ? `src/${room}` : `src/${room}/**/*.ts`],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: `^(\\.\\./)+(${names})(/|$)`, message: `${room} may import only from: ${allowedFrom(room).join(', ') || 'no other room'} (lint/rooms.mjs)` }] }],
    },
  };
};

export default tseslint.config(
  { ignores: ['dist/**', 'dist-bundle/**', 'dist-deb/**', 'node_modules/**', 'coverage/**', '.state/**', 'examples/**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  ...[...ROOMS, ...APART].map(roomRule),
  {
    files: ['bin/**/*.js', 'lint/**/*.mjs', 'reliability/**/*.mjs', 'examples/**/*.mjs', 'web/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly' } },
  },
);
