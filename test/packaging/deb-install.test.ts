// The Debian package installed with dpkg into a Debian 12 container that runs no init system: the commands, the
// conffile and the unit as installed, `keystone doctor`, the agent running the example stack from the package, an
// upgrade under it (the test restarts the agent, as no systemd can), removal and purge. The unit under systemd is
// deb-systemd.test.ts.
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
  EXAMPLE_CONFIG,
  healthyStack,
  identities,
  prepareExample,
  writeExampleConfig,
} from './example-stack.js';

const r = needs('docker', 'debootstrap', 'dpkg-deb', 'root');

/** The agent as the unit starts it, in the background; its pid in /run/keystone-agent.pid (the launcher execs node). */
const START_AGENT =
  "setsid sh -c 'echo $$ > /run/keystone-agent.pid; exec keystone agent --config /etc/keystone/agent.toml >>/var/log/keystone-agent.log 2>&1' </dev/null >/dev/null 2>&1 &";

describe.skipIf(r.skip)(r.title('the keystone .deb in Debian 12 without systemd'), () => {
  let debs: BuiltDebs;
  let c: DebianContainer;

  beforeAll(async () => {
    // The image and the packages are made once per machine / per change of the code (minutes the first time).
    await ensureDebianImage();
    debs = await buildDebs([PACKAGE_VERSION, UPGRADE_VERSION]);
    c = await DebianContainer.start({ systemd: false, debs: debs.dir });
  }, 30 * 60_000);

  afterAll(async () => {
    await c?.remove();
  }, 120_000);

  async function stopAgent(): Promise<void> {
    const pid = (await c.must('cat /run/keystone-agent.pid')).trim();
    await c.must(`kill -TERM ${pid}`);
    await pollUntil(`the agent (pid ${pid}) to exit`, 30_000, async () =>
      (await c.exec(`kill -0 ${pid}`)).code !== 0 ? true : undefined,
    );
  }

  it("installs with dpkg -i: the commands run the bundled Node, the configuration is a conffile, the state directory the agent's", async () => {
    // Without /run/systemd/system the maintainer scripts must not call systemctl (it would fail the install). Node is
    // keystone-node's, installed beside it (or, from the build before keystone-node, inside the package).
    await c.must(`dpkg -i ${installArgs(debs, PACKAGE_VERSION)}`);
    expect((await c.must('keystone --version')).trim()).toBe(`keystone ${PACKAGE_VERSION}`);
    // The installed launchers take no test hooks from the environment: a caller's kept environment (sudo -E) does
    // not choose the code root runs.
    expect((await c.must('KEYSTONE_LIB=/tmp KEYSTONE_NODE=/bin/false keystone --version')).trim()).toBe(
      `keystone ${PACKAGE_VERSION}`,
    );
    expect((await c.exec('keystonectl --help')).stdout).toMatch(/keystonectl/);
    const [major, minor] = (await c.must(`${installedNode(debs)} -p process.versions.node`))
      .trim()
      .split('.')
      .map(Number);
    expect(major! > 20 || (major === 20 && minor! >= 19)).toBe(true);
    // Debian 12 has no Node of its own here: the package does not rely on one.
    expect((await c.exec('command -v node')).code).not.toBe(0);
    expect((await c.must('stat -c "%a %U:%G" /var/lib/keystone')).trim()).toBe('711 root:root');
    expect(await c.must("dpkg-query -W -f='${Conffiles}' keystone")).toMatch(
      /\/etc\/keystone\/agent\.toml [0-9a-f]{32}/,
    );
    expect(await c.must('cat /lib/systemd/system/keystone.service')).toMatch(
      /^ExecStart=\/usr\/bin\/keystone agent --config \/etc\/keystone\/agent\.toml$/m,
    );
    // Every file is where md5sums says, as shipped.
    await c.must(`dpkg --verify keystone${debs.node ? ' keystone-node' : ''}`);
    // The state store's SQLite is the package's lean build (packaging/sqlite-addon-build.mjs; SQLite's table of
    // compile options says which): no full-text search or R-trees, no JSON functions. The tests below run on it.
    const addons = (await c.must('ls /usr/lib/keystone/native/*.node')).trim().split('\n');
    expect(addons.length).toBeGreaterThan(0);
    for (const addon of addons) {
      expect((await c.exec(`grep -a -q -e ENABLE_FTS5 -e ENABLE_RTREE ${addon}`)).code, addon).toBe(1);
      expect((await c.exec(`grep -a -q OMIT_JSON ${addon}`)).code, addon).toBe(0);
    }
  }, 120_000);

  it('systemd-analyze verify accepts the unit (its ExecStart exists)', async () => {
    const v = await c.exec('systemd-analyze verify /lib/systemd/system/keystone.service');
    expect(v.stderr + v.stdout).toBe('');
    expect(v.code).toBe(0);
  }, 120_000);

  it('the agent refuses the shipped template with exit 2, which the unit does not restart', async () => {
    const a = await c.exec('keystone agent --config /etc/keystone/agent.toml');
    expect(a.stderr).toMatch(/KS_CONFIG_SOURCE/);
    expect(a.code).toBe(2);
    expect(await c.must('cat /lib/systemd/system/keystone.service')).toMatch(/^RestartPreventExitStatus=2$/m);
  }, 120_000);

  it('keystone init replaces the shipped template (comments only) by a configuration the agent takes; then it needs --force', async () => {
    await c.must('keystonectl keygen --out /etc/keystone/keys/release --no-password');
    const init =
      'keystone init --repo https://git.fleet.invalid/fleet.git --status-repo https://git.fleet.invalid/reports.git --device edge-7 --label role=gateway --trusted-key /etc/keystone/keys/release.pub';
    await c.must(init);
    expect(await c.must('cat /etc/keystone/agent.toml')).toMatch(
      /^repo = "https:\/\/git\.fleet\.invalid\/fleet\.git"$/m,
    );
    const again = await c.exec(init);
    expect(again.stderr).toMatch(/--force/);
    expect(again.code).toBe(2);
    await c.must(`${init} --force`);
    // Everything but the repository, which no device reaches (.invalid), is as the agent needs it; bare
    // `keystone doctor` reads the installed configuration.
    const d = await c.exec('keystone doctor --json');
    const checks = Object.fromEntries(
      (JSON.parse(d.stdout) as Array<{ check: string; status: string }>).map((x) => [x.check, x.status]),
    );
    expect(checks).toMatchObject({ source: 'pass', 'trusted-keys': 'pass', 'state-dir': 'pass', 'git-remote': 'fail' });
  }, 120_000);

  it('keystone doctor on the example configuration passes the checks that matter here', async () => {
    await prepareExample(c, installedNode(debs));
    await writeExampleConfig(c);
    const d = await c.exec('keystone doctor --config /etc/keystone/agent.toml --json');
    const checks = Object.fromEntries(
      (JSON.parse(d.stdout) as Array<{ check: string; status: string }>).map((x) => [x.check, x.status]),
    );
    expect(checks).toMatchObject({
      'node-version': 'pass',
      setpriv: 'pass',
      source: 'pass',
      'state-dir': 'pass',
      plan: 'pass',
      'run-users': 'pass',
      'work-dir-reach': 'pass',
    });
    expect(d.code).toBe(0);
  }, 120_000);

  it('runs the example stack from the package until its four components are healthy', async () => {
    await c.must(START_AGENT);
    const s = await healthyStack(c, 'the example stack to be healthy');
    expect(s.components.map((x) => x.name).sort()).toEqual(['api', 'influxdb', 'telemetry', 'web']);
  }, 120_000);

  it('an upgrade to a newer package keeps every component: the restarted agent adopts them', async () => {
    const before = await identities(c, await healthyStack(c, 'the stack before the upgrade'));
    await c.must(`dpkg -i /debs/${debs.files[UPGRADE_VERSION]}`);
    expect((await c.must('keystone --version')).trim()).toBe(`keystone ${UPGRADE_VERSION}`);
    // The operator's configuration is a conffile: the upgrade leaves it as written.
    expect(await c.must('cat /etc/keystone/agent.toml')).toBe(EXAMPLE_CONFIG);
    // No systemd to restart it: the test does what postinst's try-restart does under systemd.
    await stopAgent();
    await c.must(START_AGENT);
    const after = await healthyStack(
      c,
      'the upgraded agent to adopt the stack',
      (s) => s.agent === undefined || s.agent.version === UPGRADE_VERSION,
    );
    expect(await identities(c, after)).toEqual(before);
  }, 120_000);

  it('dpkg --remove keeps the state, the configuration and the running components; dpkg --purge removes them all', async () => {
    const running = await identities(c, await healthyStack(c, 'the stack before removal'));
    await stopAgent();
    await c.must('dpkg --remove keystone');
    expect(
      (
        await c.exec(
          'test -e /usr/lib/keystone || test -e /usr/bin/keystone || test -e /lib/systemd/system/keystone.service',
        )
      ).code,
    ).not.toBe(0);
    await c.must(
      'test -f /etc/keystone/agent.toml && test -d /var/lib/keystone/components && test -f /var/lib/keystone/api-token',
    );
    expect(
      await identities(c, {
        components: Object.entries(running).map(([name, id]) => ({
          name,
          state: '',
          health: '',
          pid: Number(id.split('@')[0]),
        })),
      }),
    ).toEqual(running);

    await c.must('dpkg --purge keystone');
    for (const path of ['/etc/keystone', '/var/lib/keystone', '/usr/lib/keystone'])
      expect((await c.exec(`test -e ${path}`)).code, path).not.toBe(0);
    expect((await c.exec('dpkg-query -W keystone')).code).not.toBe(0);
    // No agent could adopt them any more: the purge stops them.
    await allGone(c, running);
  }, 120_000);
});
