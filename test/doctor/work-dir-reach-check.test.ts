// `npm start` from a clone in a 0700 directory: as root, the run users (nobody) cannot get to their work directories
// under it. Real directories, real modes, the real `nobody` of this machine.
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CurrentPlan } from '../../src/doctor/current-plan.js';
import { processComponents, runUsersOf } from '../../src/doctor/run-users-check.js';
import { checkWorkDirReach } from '../../src/doctor/work-dir-reach-check.js';
import { currentAgentIdentity } from '../../src/runtime/privileges.js';
import { readUserDb } from '../../src/state-dir/user-db.js';
import { needs } from '../support/requirements.js';
import { desired, type ComponentSpec } from '../support/state-builder.js';
import { scratch, type Scratch } from './doctor-fixtures.js';

const asNobody = (name: string): ComponentSpec => ({
  name,
  edit: (raw) => {
    if (raw.lifecycle?.run) raw.lifecycle.run.security = { user: 'nobody' };
  },
});

async function reach(plan: CurrentPlan, stateDir: string) {
  const db = await readUserDb();
  const agent = currentAgentIdentity();
  return checkWorkDirReach({ plan, users: runUsersOf(processComponents(plan), agent, db, false), stateDir, agent, db });
}

const known = (...specs: ComponentSpec[]): CurrentPlan => ({
  kind: 'known',
  state: desired(specs),
  planFile: 'plans/test.toml',
  from: 'test',
});

const root = needs('root');
describe.skipIf(root.skip)(root.title('work-dir-reach, as root with nobody'), () => {
  let s: Scratch;
  let home: string;
  beforeEach(() => {
    s = scratch();
    // A clone in root's home: /root is 0700 on Debian.
    home = join(s.dir, 'home');
    mkdirSync(home, { mode: 0o700 });
    chmodSync(home, 0o700);
  });
  afterEach(() => s.cleanup());

  it('fails when a directory above the work directories does not let the run user through, naming it and the fix', async () => {
    const stateDir = join(home, 'clone', '.state');
    const r = await reach(known(asNobody('influxdb'), asNobody('api')), stateDir);
    expect(r).toMatchObject({ check: 'work-dir-reach', status: 'fail', code: 'KS_WORK_DIR_UNREACHABLE' });
    expect(r.detail).toBe(
      `nobody (uid 65534) cannot reach the work directories of influxdb, api: ${home} (mode 0700) does not let it through`,
    );
    expect(r.fix).toContain(`chmod o+x ${home}`);
    expect(r.fix).toContain('--state-dir /var/lib/keystone');
  });

  it('checks the default run user when the plan is not known yet', async () => {
    const r = await reach({ kind: 'unknown', why: 'not known yet' }, join(home, 'state'));
    expect(r).toMatchObject({ status: 'fail', code: 'KS_WORK_DIR_UNREACHABLE' });
    expect(r.detail).toMatch(
      new RegExp(
        `^\\S+ \\(uid \\d+\\) cannot reach work directories under ${home}/state/components: ${home} \\(mode 0700\\)`,
      ),
    );
  });

  it('passes once the directory lets others through (o+x)', async () => {
    chmodSync(home, 0o701);
    const stateDir = join(home, 'clone', '.state');
    const r = await reach(known(asNobody('influxdb')), stateDir);
    expect(r).toMatchObject({
      status: 'pass',
      detail: `nobody (uid 65534) can reach their work directories under ${stateDir}/components`,
    });
  });

  it('passes when no process changes user (a plan of containers)', async () => {
    const r = await reach(known({ name: 'web', image: 'docker.io/library/nginx:1' }), join(home, 'state'));
    expect(r).toMatchObject({ status: 'pass', detail: 'no process of the plan runs as another user than the agent' });
  });
});
