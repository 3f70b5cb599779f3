// The reconcile rendered for a pull-request comment: what a merge would do to a device, and why.
import type { Reconcile } from '../../core/diff.js';
import type { Diagnostic } from '../../core/errors.js';
import { actionOf, componentsInOrder } from './reconcile-text.js';

export const code = (s: string) => '`' + s.replace(/`/g, "'") + '`';
export const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const chain = (xs: string[]) => (xs.length ? xs.map(code).join(' → ') : '_nothing_');

export function renderReconcileMarkdown(r: Reconcile, plan: string, comparedWith: string, signature: string): string {
  const out = [
    `### Keystone dry run: ${code(plan)}`,
    '',
    `Compared with ${comparedWith}. ${changeSummary(r)}`,
    '',
    signatureLine(signature),
    '',
    ...reconcileBodyMarkdown(r),
  ];
  return out.join('\n') + '\n';
}

/** "Nothing changes." or "2 of 5 components change." */
export function changeSummary(r: Reconcile): string {
  const names = componentsInOrder(r);
  const changed = names.filter((n) => actionOf(r, n) !== 'keep').length;
  return changed === 0 ? 'Nothing changes.' : `${changed} of ${names.length} components change.`;
}

/** An unsigned revision is a warning a reviewer must not miss; a signed one is a plain line. */
export function signatureLine(signature: string): string {
  return signature.startsWith('UNSIGNED') ? `> **Warning:** ${signature}` : `Signature: ${signature}.`;
}

/** The table of actions, the orders and the layers: what a section for one plan (or one fleet target) holds. */
export function reconcileBodyMarkdown(r: Reconcile): string[] {
  const names = componentsInOrder(r);
  return [
    '| component | action | reason |',
    '| --- | --- | --- |',
    ...names.map((n) => `| ${code(n)} | ${actionOf(r, n)} | ${cell(r.reasons[n] ?? '')} |`),
    '',
    `**Stop order:** ${chain(r.stopOrder)}  `,
    `**Start order:** ${chain(r.startOrder)}  `,
    `**Untouched:** ${r.noTouch.length ? r.noTouch.map(code).join(', ') : '_nothing_'}`,
    '',
    '<details><summary>Layers</summary>',
    '',
    ...r.layers.map((l, i) => `- layer ${i}: ${l.map(code).join(', ')}`),
    '',
    '</details>',
  ];
}

/** `base`: the errors are the base revision's (the ref compared with), not the pull request's. */
export function renderDiagnosticsMarkdown(plan: string, diags: Diagnostic[], opts: { base?: string } = {}): string {
  const count = `${diags.length} error${diags.length === 1 ? '' : 's'}`;
  return (
    [
      opts.base === undefined
        ? `### Keystone dry run: ${code(plan)} is invalid`
        : `### Keystone dry run: ${code(plan)} is invalid at the base ${code(opts.base)}`,
      '',
      opts.base === undefined
        ? `${count}; a device would refuse this revision and keep running what it has.`
        : `${count} in the revision compared with, so there is nothing sound to compare this change with.`,
      '',
      ...diags.map(
        (d) =>
          `- ${code(d.line ? `${d.file}:${d.line}` : d.file)} ${d.path ? code(d.path) + ' ' : ''}${cell(d.message)}${d.hint ? ` (${cell(d.hint)})` : ''} \`${d.code}\``,
      ),
    ].join('\n') + '\n'
  );
}

/**
 * A revision refused before anything was parsed (unsigned, untrusted, a file that does not match its digest): the
 * comment must say so, since an empty comment would read as "nothing to report". `base` as for the diagnostics.
 */
export function renderRefusalMarkdown(
  plan: string,
  err: { code: string; message: string; file?: string | undefined; keyId?: string | undefined },
  opts: { base?: string } = {},
): string {
  const where = [err.file && `file ${code(err.file)}`, err.keyId && `key ${code(err.keyId)}`]
    .filter(Boolean)
    .join(', ');
  return (
    [
      `### Keystone dry run: ${code(plan)} is refused${opts.base === undefined ? '' : ` at the base ${code(opts.base)}`}`,
      '',
      `> **Signature check failed:** ${cell(err.message)}${where ? ` (${where})` : ''} ${code(err.code)}`,
      '',
      opts.base === undefined
        ? 'A device would refuse this revision as a whole and keep running what it has. Sign the change with a trusted key (`keystonectl sign`).'
        : 'The revision compared with does not verify with the trusted keys, so there is nothing sound to compare this change with.',
    ].join('\n') + '\n'
  );
}
