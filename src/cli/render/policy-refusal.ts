// A plan the device policy refuses (SPEC §5), as `keystonectl apply-dry --agent` prints it: one line per problem with
// the recipe, the TOML path and the flag that would allow it, for a terminal or a pull request.
import type { PolicyIssue } from '../../core/policy-check.js';

/** One refusal of one component: where it is and why. */
export interface PolicyProblem extends PolicyIssue {
  component: string;
  file: string;
}

const line = (p: PolicyProblem) => `${p.file}: ${p.path}: ${p.message}${p.hint ? ` (${p.hint})` : ''} [${p.code}]`;

export function renderPolicyRefusalText(plan: string, agentUrl: string, problems: PolicyProblem[]): string {
  return (
    `keystonectl: ${plan} is refused by the device policy of the agent at ${agentUrl} (${problems.length} problem${problems.length === 1 ? '' : 's'}); nothing was changed\n` +
    problems.map((p) => `  ${line(p)}\n`).join('')
  );
}

export function renderPolicyRefusalMarkdown(plan: string, agentUrl: string, problems: PolicyProblem[]): string {
  const c = (s: string) => '`' + s.replace(/`/g, "'") + '`';
  return (
    [
      `### Keystone dry run: ${c(plan)} is refused by the device's policy`,
      '',
      `The agent at ${c(agentUrl)} would refuse this revision and keep running what it has.`,
      '',
      ...problems.map((p) => `- ${c(p.file)} ${c(p.path)} ${p.message.replace(/\|/g, "\\|")}${p.hint ? ` (${p.hint})` : ""} \`${p.code}\``),
    ].join('\n') + '\n'
  );
}
