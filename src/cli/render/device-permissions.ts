// The device permissions a dry run's change needs beyond the safe defaults, for a terminal and for a pull request:
// `needs --allow-root for api`, with the recipe and TOML path that ask for it.
import type { Permission } from '../commands/apply-dry-permissions.js';

const where = (p: Permission) => `${p.file}: ${p.path}`;
const forWhom = (p: Permission) => (p.target !== undefined ? `${p.component} in target ${p.target}` : p.component);

/** Nothing when nothing is needed: the safe defaults are not worth a line. */
export function renderPermissionsText(permissions: readonly Permission[]): string {
  if (!permissions.length) return '';
  return (
    `device permissions beyond the safe defaults (a device without them refuses this revision):\n` +
    permissions.map((p) => `  needs ${p.needs} for ${forWhom(p)} (${where(p)}) [${p.code}]\n`).join('')
  );
}

/** `heading`: the level of the report's sections (`####` under one plan's `###`, `###` beside a fleet's targets). */
export function renderPermissionsMarkdown(permissions: readonly Permission[], heading = '####'): string {
  if (!permissions.length) return '';
  const c = (s: string) => '`' + s.replace(/`/g, "'") + '`';
  return (
    [
      '',
      `${heading} Device permissions`,
      '',
      'A device refuses this revision unless its agent runs with these flags (beyond the safe defaults):',
      '',
      ...permissions.map(
        (p) =>
          `- needs ${c(p.needs)} for ${c(p.component)}${p.target !== undefined ? ` (target ${c(p.target)})` : ''}: ${c(p.file)} ${c(p.path)} \`${p.code}\``,
      ),
    ].join('\n') + '\n'
  );
}
