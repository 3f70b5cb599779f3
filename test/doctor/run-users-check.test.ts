// The run users and groups of the plan, resolved against this machine's /etc/passwd and /etc/group as a root agent
// resolves them (the agent's identity is a fact passed in: the resolution itself is the process runtime's).
import { describe, expect, it } from 'vitest';
import type { CurrentPlan } from '../../src/doctor/current-plan.js';
import { checkRunUsers, processComponents, runUsersOf } from '../../src/doctor/run-users-check.js';
import type { AgentIdentity } from '../../src/runtime/privileges.js';
import { readUserDb } from '../../src/state-dir/user-db.js';
import { desired, type ComponentSpec } from '../support/state-builder.js';

const ROOT: AgentIdentity = { uid: 0, gid: 0, name: 'root', home: '/root' };
const GHOST = 'keystone-doctor-ghost';

const withUser = (name: string, user: string | undefined, image?: string): ComponentSpec => ({
  name,
  ...(image !== undefined && { image }),
  edit: (raw) => {
    if (user !== undefined && raw.lifecycle?.run) raw.lifecycle.run.security = { user };
  },
});

async function runUsers(specs: ComponentSpec[], opts: { agent?: AgentIdentity; allowRoot?: boolean } = {}) {
  const plan: CurrentPlan = { kind: 'known', state: desired(specs), planFile: 'plans/test.toml', from: 'test' };
  const agent = opts.agent ?? ROOT;
  return checkRunUsers(
    plan,
    runUsersOf(processComponents(plan), agent, await readUserDb(), opts.allowRoot ?? false),
    agent,
  );
}

describe('run-users', () => {
  it('passes users that exist, grouped by user, and leaves containers out', async () => {
    const r = await runUsers([
      withUser('a', 'nobody'),
      withUser('b', 'nobody:65534'),
      withUser('web', undefined, 'docker.io/library/nginx:1'),
    ]);
    expect(r).toMatchObject({ check: 'run-users', status: 'pass' });
    expect(r.detail).toMatch(/^nobody \(uid 65534\), gid 65534: a, b$/);
  });

  it('fails a user that does not exist, naming the component and its recipe', async () => {
    const r = await runUsers([withUser('a', 'nobody'), withUser('b', GHOST)]);
    expect(r).toMatchObject({ status: 'fail', code: 'KS_USER_UNKNOWN' });
    expect(r.detail).toBe(
      `b (recipes/com.acme.b.toml): user "${GHOST}" does not exist on this device (not in /etc/passwd)`,
    );
    expect(r.fix).toContain('adduser --system --group');
  });

  it('fails a group that does not exist', async () => {
    const r = await runUsers([withUser('a', `nobody:${GHOST}`)]);
    expect(r).toMatchObject({ status: 'fail', code: 'KS_USER_UNKNOWN' });
    expect(r.detail).toContain(`group "${GHOST}" does not exist on this device`);
  });

  it('fails root without --allow-root, and passes it with', async () => {
    expect(await runUsers([withUser('a', 'root')])).toMatchObject({ status: 'fail', code: 'KS_ROOT_NOT_PERMITTED' });
    expect(await runUsers([withUser('a', 'root')], { allowRoot: true })).toMatchObject({
      status: 'pass',
      detail: 'root (uid 0), gid 0: a',
    });
  });

  it('warns when the agent is not root: recipe users are not applied', async () => {
    const alice: AgentIdentity = { uid: 1234, gid: 1234, name: 'alice', home: '/home/alice' };
    const r = await runUsers([withUser('a', GHOST)], { agent: alice });
    expect(r).toMatchObject({ status: 'warn' });
    expect(r.detail).toBe(
      'the agent is not root (uid 1234): components run as alice (uid 1234), gid 1234: a; recipe users and capabilities are not applied',
    );
  });

  it('skips when the plan is not known or does not load', async () => {
    const db = await readUserDb();
    expect(
      checkRunUsers({ kind: 'unknown', why: 'not known yet: nothing applied' }, runUsersOf([], ROOT, db, false), ROOT),
    ).toMatchObject({ status: 'skip', detail: 'the plan is not known yet: nothing applied' });
    expect(checkRunUsers({ kind: 'invalid', why: 'x', fix: 'y' }, [], ROOT)).toMatchObject({ status: 'skip' });
  });
});
