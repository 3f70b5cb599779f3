// Lint the TypeScript sources and tests; generated output and fixtures are not ours to lint.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
  {
    files: ['bin/**/*.js', 'reliability/**/*.mjs', 'examples/**/*.mjs', 'web/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly' } },
  },
);
