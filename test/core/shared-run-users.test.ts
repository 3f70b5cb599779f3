// Components that read secrets and share their run user (shared-run-users.ts): pure, from the desired state and who
// each component runs as.
import { describe, expect, it } from 'vitest';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import { sharedRunUsers, type RunUser } from '../../src/core/shared-run-users.js';
import { processComponent } from '../runtime/runtime-fixtures.js';

const NOBODY: RunUser = { uid: 65534, name: 'nobody' };
const ROOT_AGENT: RunUser = { uid: 0, name: 'root' };

/** A component reading `secrets` (who it runs as: the map each test gives the resolver). */
function comp(name: string, secrets: string[] = [], runPath?: string): DesiredComponent {
  return {
    ...processComponent(name.replaceAll('/', '-'), { command: 'true' }),
    name,
    ...(secrets.length && { secrets }),
    ...(runPath && { runPath }),
  };
}

const run = (components: DesiredComponent[], users: Record<string, RunUser | undefined>, agent = ROOT_AGENT) =>
  sharedRunUsers(components, (c) => users[c.name], agent);

describe('sharedRunUsers', () => {
  it('one warning per component that reads secrets and shares its user, naming the user and every other component of it', () => {
    const ws = run([comp('api', ['db_password']), comp('web'), comp('worker', ['api_token']), comp('alone', ['key'])], {
      api: NOBODY,
      web: NOBODY,
      worker: NOBODY,
      alone: { uid: 1001, name: 'alone' },
    });
    expect(ws.map((w) => [w.code, w.component, w.user, w.others, w.agent])).toEqual([
      ['KS_SECRET_SHARED_USER', 'api', 'nobody (uid 65534)', ['web', 'worker'], false],
      ['KS_SECRET_SHARED_USER', 'worker', 'nobody (uid 65534)', ['api', 'web'], false],
    ]);
    expect(ws[0]!.message).toBe(
      'api reads secrets (db_password) and runs as nobody (uid 65534), as web and worker do: each can read its secrets (its environment in /proc/PID/environ, its secret files); give it a user of its own (lifecycle.run.security.user)',
    );
  });

  it('by uid: two names of one uid are one user; a member names its own run path', () => {
    const ws = run([comp('stack/db', ['pw'], 'components.db.lifecycle.run'), comp('tool')], {
      'stack/db': { uid: 70, name: 'db' },
      tool: { uid: 70, name: 'dbalias' },
    });
    expect(ws).toHaveLength(1);
    expect(ws[0]!.message).toContain('runs as db (uid 70), as tool does');
    expect(ws[0]!.message).toContain('(components.db.lifecycle.run.security.user)');
  });

  it('the agent’s own user counts: a root component beside a root agent; every component of an agent that is not root', () => {
    const asRoot = run([comp('priv', ['k'])], { priv: { uid: 0, name: 'root' } });
    expect(asRoot.map((w) => [w.component, w.others, w.agent])).toEqual([['priv', [], true]]);
    expect(asRoot[0]!.message).toContain('runs as root (uid 0), as the agent itself does');

    const me: RunUser = { uid: 1000, name: 'pi' };
    const notRoot = run([comp('a', ['k']), comp('b')], { a: me, b: me }, me);
    expect(notRoot.map((w) => [w.component, w.others, w.agent])).toEqual([['a', ['b'], true]]);
    expect(notRoot[0]!.message).toContain('as b and the agent itself do');
    expect(notRoot[0]!.message).toContain('run the agent as root, and give it a user of its own');
  });

  it('nothing for components alone with their user, that read no secret, or whose user is not known here (containers)', () => {
    expect(run([comp('a', ['k']), comp('b', ['k'])], { a: NOBODY, b: { uid: 1002 } })).toEqual([]);
    expect(run([comp('a'), comp('b')], { a: NOBODY, b: NOBODY })).toEqual([]);
    expect(run([comp('a', ['k']), comp('c', ['k'])], { a: NOBODY, c: undefined })).toEqual([]);
    // A uid without a passwd name is said by its number.
    expect(run([comp('a', ['k']), comp('b')], { a: { uid: 4242 }, b: { uid: 4242 } })[0]!.user).toBe('uid 4242');
  });
});
