// The reconcile rendered for a pull-request comment: what a merge would do to a device, and why.
import type { Reconcile } from '../../core/diff.js';
import type { Diagnostic } from '../../core/errors.js';
import { actionOf, componentsInOrder } from './reconcile-text.js';

const code = (s: string) => '`' + s.replace(/`/g, "'") + '`';
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const chain = (xs: string[]) => (xs.length ? xs.map(code).join(' → ') : '_nothing_');

export function renderReconcileMarkdown(r: Reconcile, plan: string, comparedWith: string, signature: string): string {
  const names = componentsInOrder(r);
  const changed = names.filter((n) => actionOf(r, n) !== 'keep').length;
  const out = [
    `### Keystone dry run: ${code(plan)}`,
    '',
    `Compared with ${comparedWith}. ${changed === 0 ? 'Nothing changes.' : `${changed} of ${names.length} components change.`}`,
    '',
    signature.startsWith('UNSIGNED') ? `> **Warning:** ${signature}` : `Signature: ${signature}.`,
    '',
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
  return out.join('\n') + '\n';
}

export function renderDiagnosticsMarkdown(plan: string, diags: Diagnostic[]): string {
  return (
    [
      `### Keystone dry run: ${code(plan)} is invalid`,
      '',
      `${diags.length} error${diags.length === 1 ? '' : 's'}; a device would refuse this revision and keep running what it has.`,
      '',
      ...diags.map((d) => `- ${code(d.line ? `${d.file}:${d.line}` : d.file)} ${d.path ? code(d.path) + ' ' : ''}${cell(d.message)}${d.hint ? ` (${cell(d.hint)})` : ''} \`${d.code}\``),
    ].join('\n') + '\n'
  );
}
