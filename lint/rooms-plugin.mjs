// The ESLint rule behind lint/rooms.mjs: a file of src/<room>/ may import only from the rooms below its own. The
// specifier is resolved as Node would (so `../core/../cli/x.js` and `../../src/cli/x.js` are the cli room), every
// form is checked (import, import type, export … from, import()), and a computed import() is refused in src/: a
// room's imports must be readable by this rule and by test/architecture/rooms.test.ts, which also forbids circles.
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APART, ROOMS, allowedFrom } from './rooms.mjs';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

/** The room of a path inside src/ (its first folder, or the file's own name), or undefined outside src/. */
function roomOf(path) {
  const rel = relative(SRC, path);
  if (rel.startsWith('..') || rel === '') return undefined;
  const first = rel.split(sep)[0];
  return first.endsWith('.js') ? first.replace(/\.js$/, '.ts') : first;
}

const importBoundary = {
  meta: {
    type: 'problem',
    docs: { description: 'a room of src/ imports only from the rooms below it (lint/rooms.mjs)' },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    const from = roomOf(file);
    if (from === undefined) return {};
    const check = (node, spec) => {
      if (!spec.startsWith('.')) return;
      const target = resolve(dirname(file), spec);
      const to = roomOf(target);
      if (to === undefined) {
        context.report({ node, message: `src/ imports only from src/: '${spec}' is outside it` });
        return;
      }
      if (to === from) return;
      if (![...ROOMS, ...APART].includes(to))
        context.report({ node, message: `'${spec}' is in ${to}, which lint/rooms.mjs does not list` });
      else if (!allowedFrom(from).includes(to))
        context.report({
          node,
          message: `${from} may not import from ${to} ('${spec}'); ${from} may import only from: ${allowedFrom(from).join(', ') || 'no other room'} (lint/rooms.mjs)`,
        });
    };
    const literal = (node) =>
      node?.type === 'Literal' && typeof node.value === 'string'
        ? node.value
        : node?.type === 'TemplateLiteral' && node.expressions.length === 0
          ? node.quasis[0].value.cooked
          : undefined;
    const fromSource = (node) => {
      if (node.source) check(node, node.source.value);
    };
    return {
      ImportDeclaration: fromSource,
      ExportNamedDeclaration: fromSource,
      ExportAllDeclaration: fromSource,
      ImportExpression(node) {
        const spec = literal(node.source);
        if (spec === undefined)
          context.report({
            node,
            message: 'a computed import() in src/: name the module, so that the rooms can be checked',
          });
        else check(node, spec);
      },
      TSImportType(node) {
        const spec = literal(node.argument?.literal ?? node.argument);
        if (spec !== undefined) check(node, spec);
      },
    };
  },
};

export default { rules: { 'import-boundary': importBoundary } };
