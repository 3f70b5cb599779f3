// docs/errors.md from the error catalogue (src/core/error-catalogue.ts): `npm run errors-doc` writes it (from the
// build in dist/), test/core/error-catalogue.test.ts checks that the file is what renderErrorsDoc makes of the
// catalogue. Nothing else writes the page.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const KINDS = [
  ['invalid', 'the input does not validate (a revision, a flag, a configuration file, a request): fix it'],
  ['refused', 'the input is well-formed but not trusted or not permitted here (a signature, a permission, a policy)'],
  ['stalled', 'an operation failed and will not succeed by itself: someone has to look'],
  ['waiting', 'held back on purpose until something changes (a lock, a gate, a shutdown); nothing is wrong'],
  ['transient', 'a failure outside Keystone that is retried (a network, a busy server)'],
];

const cell = (text) => String(text).replace(/\|/g, '\\|');

/** The page, from the catalogue's entries: one table per kind, one row (and one anchor) per code. */
export function renderErrorsDoc(catalogue) {
  const codes = Object.keys(catalogue).sort();
  const out = [
    '# Error codes',
    '',
    '<!-- Generated from src/core/error-catalogue.ts by `npm run errors-doc`: edit the catalogue, not this file. -->',
    '',
    `Every \`KS_*\` code Keystone emits (${codes.length} of them), grouped by kind. Codes are stable: scripts and tests`,
    'branch on them, never on message text. Each code has an anchor here (`errors.md#ks_toml_syntax`) that other pages',
    'link to.',
    '',
    'Exit codes (SPEC §9): 0 ok, 1 the operation failed, 2 bad input (invalid, unsigned, untrusted). The exit column is',
    'what `keystone` or `keystonectl` exits with when an error with that code ends it; an operation failure',
    '(`OperationError`) is always 1, whatever its code. Problems found in a revision are reported together, each with its',
    'own code, under `KS_INVALID_REVISION` (exit code 2). The HTTP column is the status the API answers with; for a',
    'keystonectl command talking to the agent, a 400 or a 404 is exit code 2 and any other error 1.',
    '',
    '| kind | what it means |',
    '| --- | --- |',
    ...KINDS.map(([k, what]) => `| [${k}](#${k}) | ${what} |`),
  ];
  for (const [kind] of KINDS) {
    const mine = codes.filter((c) => catalogue[c].kind === kind);
    out.push('', `## ${kind}`, '', '| code | exit | HTTP | meaning |', '| --- | --- | --- | --- |');
    for (const code of mine) {
      const e = catalogue[code];
      const see = e.see ? ` ([${e.see}](${e.see}))` : '';
      const unused = e.unused ? ` Not emitted: ${e.unused}.` : '';
      out.push(
        `| <a id="${code.toLowerCase()}"></a>\`${code}\` | ${e.exit} | ${e.http ?? ''} | ${cell(e.meaning)}${see}${cell(unused)} |`,
      );
    }
  }
  return out.join('\n') + '\n';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { CATALOGUE } = await import('../dist/core/error-catalogue.js');
  const file = fileURLToPath(new URL('../docs/errors.md', import.meta.url));
  writeFileSync(file, renderErrorsDoc(CATALOGUE));
  console.log(`wrote ${file}`);
}
