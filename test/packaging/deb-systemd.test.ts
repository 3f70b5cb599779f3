// The keystone unit under a real systemd: a Debian 12 container booting systemd as PID 1 (debian-container.ts says
// how), the package installed with dpkg, and the agent run by `systemctl` with the example stack. KillMode=process
// is what this is about: a restart, an upgrade (postinst's try-restart) and a stop must leave every component's
// process as it was.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needs } from '../support/requirements.js';
import {
  buildDebs,
  installArgs,
  installedNode,
  PACKAGE_VERSION,
  UPGRADE_VERSION,
  type BuiltDebs,
} from './deb-builds.js';
import { ensureDebianImage } from './debian-image.js';
import { DebianContainer, pollUntil } from './debian-container.js';
import {
  allGone,
  identities,
  prepareExample,
  stackUnderUnit as stackOfUnit,
  systemdBooted,
  unitProperties,
  writeExampleConfig,
} from './example-stack.js';

const r = needs('docker', 'debootstrap', 'dpkg-deb', 'root');

describe.skipIf(r.skip)(r.title('the keystone unit under systemd (PID 1 in a container)'), () => {
  let debs: BuiltDebs;
  let c: DebianContainer;

  beforeAll(async () => {
    await ensureDebianImage();
    debs = await buildDebs([PACKAGE_VERSION, UPGRADE_VERSION]);
    c = await DebianContainer.start({ systemd: true, debs: debs.dir });
    await systemdBooted(c);
  }, 30 * 60_000);

  afterAll(async () => {
    await c?.remove();
  }, 120_000);

  const unit = () => unitProperties(c);
  const stackUnderUnit = (what: string, not?: string) => stackOfUnit(c, what, not);

  it('installs neither enabled nor started; the shipped template fails once, without a restart loop', async () => {
    await c.must(`dpkg -i ${installArgs(debs, PACKAGE_VERSION)}`);
    expect((await c.exec('systemctl is-enabled keystone')).stdout.trim()).toBe('disabled');
    expect((await c.exec('systemctl is-active keystone')).stdout.trim()).toBe('inactive');
    await c.must('systemctl start keystone');
    // Exit 2 is a failed unit at once; any other failure would be "activating (auto-restart)" for RestartSec first.
    const u = await pollUntil('the agent to give up on the template', 30_000, async () => {
      const p = await unit();
      return p.ActiveState === 'failed' || p.SubState === 'auto-restart' ? p : undefined;
    });
    expect(u).toMatchObject({ ActiveState: 'failed', ExecMainStatus: '2', NRestarts: '0' });
    expect(await c.must('journalctl -u keystone --no-pager')).toMatch(/KS_CONFIG_SOURCE/);
  }, 120_000);

  it('systemd-analyze verify accepts the unit', async () => {
    const v = await c.exec('systemd-analyze verify keystone.service');
    expect(v.stderr + v.stdout).toBe('');
    expect(v.code).toBe(0);
  }, 120_000);

  it('systemctl start runs the example stack until its four components are healthy', async () => {
    await prepareExample(c, installedNode(debs));
    await writeExampleConfig(c);
    await c.must('systemctl reset-failed keystone && systemctl start keystone');
    const { s } = await stackUnderUnit('the example stack under systemd');
    // The components are the agent's children, in the unit's control group (which KillMode=process leaves alone).
    for (const comp of s.components) expect(await c.must(`cat /proc/${comp.pid}/cgroup`)).toMatch(/keystone\.service/);
  }, 120_000);

  it('systemctl restart keystone keeps every component: the new agent adopts them', async () => {
    const { s, mainPid } = await stackUnderUnit('the stack before the restart');
    const before = await identities(c, s);
    await c.must('systemctl restart keystone');
    const after = await stackUnderUnit('the restarted agent to adopt the stack', mainPid);
    expect(after.mainPid).not.toBe(mainPid);
    expect(await identities(c, after.s)).toEqual(before);
  }, 120_000);

  it('an upgrade restarts the agent (postinst try-restart) and keeps every component', async () => {
    const { s, mainPid } = await stackUnderUnit('the stack before the upgrade');
    const before = await identities(c, s);
    await c.must(`dpkg -i /debs/${debs.files[UPGRADE_VERSION]}`);
    const after = await stackUnderUnit('the upgraded agent to adopt the stack', mainPid);
    if (after.s.agent) expect(after.s.agent.version).toBe(UPGRADE_VERSION);
    expect((await c.must('keystone --version')).trim()).toBe(`keystone ${UPGRADE_VERSION}`);
    expect(await identities(c, after.s)).toEqual(before);
  }, 120_000);

  it('systemctl stop keystone stops the agent alone; started again, it adopts the components', async () => {
    const { s } = await stackUnderUnit('the stack before the stop');
    const before = await identities(c, s);
    await c.must('systemctl stop keystone');
    expect((await unit()).ActiveState).toBe('inactive');
    expect(await identities(c, s)).toEqual(before);
    await c.must('systemctl start keystone');
    const after = await stackUnderUnit('the agent to adopt the stack after a stop');
    expect(await identities(c, after.s)).toEqual(before);
  }, 120_000);

  it('dpkg --remove stops the agent (prerm) and keeps the components and the state; dpkg --purge removes them all', async () => {
    const { s } = await stackUnderUnit('the stack before removal');
    const running = await identities(c, s);
    await c.must('systemctl enable keystone');
    await c.must('dpkg --remove keystone');
    expect((await unit()).ActiveState).not.toBe('active');
    expect(await identities(c, s)).toEqual(running);
    await c.must('test -f /etc/keystone/agent.toml && test -f /var/lib/keystone/api-token');

    await c.must('dpkg --purge keystone');
    for (const path of [
      '/etc/keystone',
      '/var/lib/keystone',
      '/usr/lib/keystone',
      '/etc/systemd/system/multi-user.target.wants/keystone.service',
    ])
      expect((await c.exec(`test -e ${path} || test -L ${path}`)).code, path).not.toBe(0);
    await allGone(c, running);
  }, 120_000);
});
