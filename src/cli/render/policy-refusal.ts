// A plan the device policy refuses (SPEC §5), as `keystonectl apply-dry --agent` (the running agent's policy) or
// `--device-policy` (the policy of the `--allow-*` flags given) prints it: one line per problem with the recipe, the
// TOML path and the flag that would allow it, for a terminal or a pull request.
import type { PolicyIssue } from '../../core/policy-check.js';

/** One refusal of one component: where it is and why. */
export interface PolicyProblem extends PolicyIssue {
  component: string;
  file: string;
}

const line = (p: PolicyProblem) => `${p.file}: ${p.path}: ${p.message}${p.hint ? ` (${p.hint})` : ''} [${p.code}]`;

/** Whose policy refuses: the running agent's, or that of a device with the flags given (`a device with --allow-root`). */
export type RefusingDevice = { agentUrl: string } | { flags: string };

const whose = (d: RefusingDevice) => ('agentUrl' in d ? `the agent at ${d.agentUrl}` : d.flags);

export function renderPolicyRefusalText(plan: string, device: RefusingDevice, problems: PolicyProblem[]): string {
  return (
    `keystonectl: ${plan} is refused by the device policy of ${whose(device)} (${problems.length} problem${problems.length === 1 ? '' : 's'}); nothing was changed\n` +
    problems.map((p) => `  ${line(p)}\n`).join('')
  );
}

export function renderPolicyRefusalMarkdown(plan: string, device: RefusingDevice, problems: PolicyProblem[]): string {
  const c = (s: string) => '`' + s.replace(/`/g, "'") + '`';
  return (
    [
      `### Keystone dry run: ${c(plan)} is refused by the device's policy`,
      '',
      'agentUrl' in device
        ? `The agent at ${c(device.agentUrl)} would refuse this revision and keep running what it has.`
        : `${device.flags.replace(/^a/, 'A')} would refuse this revision and keep running what it has.`,
      '',
      ...problems.map(
        (p) =>
          `- ${c(p.file)} ${c(p.path)} ${p.message.replace(/\|/g, '\\|')}${p.hint ? ` (${p.hint})` : ''} \`${p.code}\``,
      ),
    ].join('\n') + '\n'
  );
}
