// keystonectl against a real in-process agent (real processes) and the real HTTP API listening on loopback port 0:
// status, restart (dry and real, the token read from the state directory), history, errors, and logs read from the
// component's files while it writes them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCtl } from '../../support/cli-run.js';
import { sleeper, type ComponentSpec } from '../../support/stack-fixture.js';
import { apiStack, type ApiStack } from '../../api/api-stack.js';
import { startCtl } from '../../cli/agent-commands/live-run.js';

/** db writes a numbered line every 20 ms to stdout (and one to stderr); api and web are hard on it in a chain. */
const components = (): ComponentSpec[] => [
  {
    name: 'db',
    version: '2.7.5',
    command: 'sh',
    args: ['-c', 'echo "db ready" >&2; i=0; while true; i=$((i+1)); do echo "db tick $i"; sleep 0.02; done'],
  },
  sleeper('api', [{ component: 'db', type: 'hard' }]),
  sleeper('telemetry', [{ component: 'db', type: 'ordering' }]),
  sleeper('web', [{ component: 'api', type: 'hard' }]),
];

/** The numbers of `db tick N` lines, checking every line is one. */
function ticks(text: string): number[] {
  const lines = text.split('\n').filter(Boolean);
  for (const l of lines) expect(l).toMatch(/^db tick \d+$/);
  return lines.map((l) => Number(l.slice('db tick '.length)));
}

const consecutive = (ns: number[]) => ns.every((n, i) => i === 0 || n === ns[i - 1]! + 1);

describe('keystonectl against a running agent', { timeout: 60_000 }, () => {
  let s: ApiStack;
  let url: string;
  const ctl = (...args: string[]) => runCtl([...args, '--agent', url, '--state-dir', s.stateDir], '/');
  /** logs reads files, not the API: it takes no --agent. */
  const logs = (...args: string[]) => runCtl(['logs', ...args, '--state-dir', s.stateDir], '/');

  beforeAll(async () => {
    s = await apiStack({ components });
    url = `http://127.0.0.1:${(await s.listen()).port}`;
  });
  afterAll(async () => {
    await s?.close();
  });

  it('status --json lists the running components with their live pids; the unsigned revision is flagged', async () => {
    const r = await ctl('status', '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as {
      revision: { id: string; unsigned: boolean };
      components: Array<{ name: string; state: string; pid: number; version: string }>;
    };
    expect(out.components.map((c) => [c.name, c.state])).toEqual([
      ['db', 'running'],
      ['api', 'running'],
      ['telemetry', 'running'],
      ['web', 'running'],
    ]);
    expect(Object.fromEntries(out.components.map((c) => [c.name, c.pid]))).toEqual(s.livePids());
    expect(out.revision).toMatchObject({ id: await s.fx.revisionId(), unsigned: true });
    expect(r.stderr).toMatch(/WARNING: the applied revision is UNSIGNED/);
  });

  it('status prints the table under the revision line', async () => {
    const r = await ctl('status');
    expect(r.code).toBe(0);
    const [agent, head, policy, header, ...rows] = r.stdout.trimEnd().split('\n');
    // Which agent answers (issue 17): this test's agent runs in this very process.
    expect(agent).toMatch(
      new RegExp(`^agent pid ${process.pid} {2}keystone \\d+\\.\\d+\\.\\d+\\S* {2}started \\d+s ago$`),
    );
    expect(head).toMatch(
      /^revision dir:[0-9a-f]+ {2}plan plans\/\S+ {2}applied \d+s ago {2}outcome success {2}\*\*\* UNSIGNED/,
    );
    // The device policy (SPEC §5) under it: this agent was given no --allow-* flag.
    expect(policy).toBe('policy: safe defaults only (no --allow-* flag)');
    expect(header).toMatch(/^COMPONENT +STATE +VERSION +PID\/CONTAINER +HEALTH +RESTARTS +SINCE$/);
    const pids = s.livePids();
    expect(rows.map((l) => l.split(/ +/).slice(0, 5))).toEqual([
      ['db', 'running', '2.7.5', String(pids.db), 'healthy'],
      ['api', 'running', '1.0.0', String(pids.api), 'healthy'],
      ['telemetry', 'running', '1.0.0', String(pids.telemetry), 'healthy'],
      ['web', 'running', '1.0.0', String(pids.web), 'healthy'],
    ]);
  });

  it('restart db --dry-run prints the hard cascade and restarts nothing (the token comes from the state directory)', async () => {
    const before = s.livePids();
    const r = await ctl('restart', 'db', '--dry-run');
    expect(r).toEqual({ code: 0, stdout: 'stop: web api db\nstart: db api web\n', stderr: '' });
    const json = await ctl('restart', 'db', '--dry-run', '--json');
    expect(JSON.parse(json.stdout)).toEqual({ stopOrder: ['web', 'api', 'db'], startOrder: ['db', 'api', 'web'] });
    expect(s.livePids()).toEqual(before);
  });

  it('restart api waits for health and prints the new live pids; db and telemetry are untouched', async () => {
    const before = s.livePids();
    const r = await ctl('restart', 'api', '--timeout', '30s');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const after = s.livePids();
    expect(after.api).not.toBe(before.api);
    expect(after.web).not.toBe(before.web);
    expect({ db: after.db, telemetry: after.telemetry }).toEqual({ db: before.db, telemetry: before.telemetry });
    expect(r.stdout).toBe(
      `restarted api and 1 hard dependent: healthy again (timeout 30s)\n  api  pid ${after.api}\n  web  pid ${after.web}\n`,
    );
  });

  it('the agent refusing: an unknown component is exit 2, a wrong token exit 1', async () => {
    const unknown = await ctl('restart', 'nope', '--dry-run');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no component "nope".*\[KS_COMPONENT_NOT_FOUND\]/);
    const wrong = await ctl('stop', 'web', '--token', 'not-the-token');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/\[KS_TOKEN_INVALID\]/);
    expect(s.agent.store.component('web')?.state).toBe('running');
  });

  it('history lists the apply', async () => {
    const r = await ctl('history');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(
        `^1 +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ +${await s.fx.revisionId()} +success +4 started, 0 stopped, 0 untouched\\n$`,
      ),
    );
  });

  it('logs db --lines 5: the last five lines of its stdout; --stderr its stderr', async () => {
    const r = await logs('db', '--lines', '5');
    expect(r.code).toBe(0);
    const ns = ticks(r.stdout);
    expect(ns).toHaveLength(5);
    expect(consecutive(ns)).toBe(true);
    expect((await logs('db', '--stderr')).stdout).toBe('db ready\n');
    expect((await logs('ghost')).code).toBe(2);
  });

  it('logs db --follow keeps printing new lines, none lost or repeated, until stopped', async () => {
    const run = startCtl(['logs', 'db', '--follow', '--lines', '3', '--state-dir', s.stateDir]);
    await run.until((o) => o.split('\n').filter(Boolean).length >= 30, 'thirty lines');
    const r = await run.stop();
    expect(r.code).toBe(0);
    const ns = ticks(r.stdout);
    expect(ns.length).toBeGreaterThanOrEqual(30);
    expect(consecutive(ns)).toBe(true);
  });
});
