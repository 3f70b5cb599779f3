// `keystone doctor` for people (one line per check: mark, id, what was seen, and the fix where one is due) and for
// scripts (`--json`: one object per check, every key always present).
import type { CheckResult, CheckStatus } from '../../doctor/check-result.js';

const MARK: Record<CheckStatus, string> = { pass: '✓', fail: '✗', warn: '!', skip: '-' };

export function doctorText(results: readonly CheckResult[]): string {
  const width = Math.max(...results.map((r) => r.check.length));
  const lines = results.map((r) => {
    const fix = r.fix !== undefined && (r.status === 'fail' || r.status === 'warn') ? ` — fix: ${r.fix}` : '';
    const code = r.code !== undefined && r.status === 'fail' ? ` [${r.code}]` : '';
    return `${MARK[r.status]} ${r.check.padEnd(width)}  ${r.detail}${code}${fix}`;
  });
  const count = (s: CheckStatus) => results.filter((r) => r.status === s).length;
  const failed = count('fail');
  const parts = [
    `${count('pass')} passed`,
    `${failed} failed`,
    ...(count('warn') ? [`${count('warn')} warning${count('warn') === 1 ? '' : 's'}`] : []),
    ...(count('skip') ? [`${count('skip')} skipped`] : []),
  ];
  lines.push(`${failed ? 'the agent would not run as it should' : 'ready'}: ${parts.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/** `{ check, ok, status, detail, fix, code }`: `ok` is false only for a failure; `fix` is "" and `code` null when there is none. */
export function doctorJson(results: readonly CheckResult[]): string {
  return `${JSON.stringify(
    results.map((r) => ({
      check: r.check,
      ok: r.status !== 'fail',
      status: r.status,
      detail: r.detail,
      fix: r.fix ?? '',
      code: r.code ?? null,
    })),
    null,
    2,
  )}\n`;
}
