// The arm64 and armhf packages on their own architectures, under qemu-user on this machine (binfmt_misc runs every
// program of the container through qemu): a Debian container of that architecture booting systemd as PID 1
// (debian-image.ts, debian-container.ts), the package installed with dpkg -i, the commands, `keystone doctor`, the
// example stack under the unit, and a restart of the agent adopting every component. arm64 is Debian 12 with
// keystone-node beside keystone; armhf is Debian 13, whose own nodejs the package depends on. The full upgrade,
// removal and purge cycle is deb-systemd.test.ts's, natively: what differs on these architectures is the binaries,
// and what runs them is covered here.
//
// Node under qemu is several times slower than natively, so every wait is a poll with a generous deadline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needs } from '../support/requirements.js';
import { buildDebs, installArgs, installedNode, PACKAGE_VERSION, type BuiltDebs } from './deb-builds.js';
import { debianImage, ensureDebianImage, hostArch, type DebianArch } from './debian-image.js';
import { DebianContainer, pollUntil } from './debian-container.js';
import { identities, prepareExample, stackUnderUnit, systemdBooted, writeExampleConfig } from './example-stack.js';

/** `uname -m` and Node's process.arch in a container of each architecture. */
const MACHINE: Record<'arm64' | 'armhf', { uname: string; node: string }> = {
  arm64: { uname: 'aarch64', node: 'arm64' },
  armhf: { uname: 'armv7l', node: 'arm' },
};

/** The image (debootstrap under qemu: 2–4 minutes here) and the package, once per machine / change of the code. */
const SETUP_TIMEOUT_MS = 40 * 60_000;
/**
 * One step under qemu: an agent's start, the example's four Node processes and their health checks. Here the stack
 * was healthy 24–36 s after `systemctl start` and adopted 9–20 s after a restart: the deadlines leave 5–10 times that.
 */
const STEP_TIMEOUT_MS = 5 * 60_000;
const STACK_DEADLINE_MS = 3 * 60_000;

for (const arch of ['arm64', 'armhf'] as const) {
  const r = needs('docker', 'debootstrap', 'dpkg-deb', 'root', `qemu-${arch}`);
  const image = debianImage(arch);

  describe.skipIf(r.skip)(
    r.title(`the keystone .deb for ${arch} in Debian ${image.suite} under qemu, systemd as PID 1`),
    () => {
      let built: BuiltDebs | Error;
      let c: DebianContainer;

      beforeAll(async () => {
        await ensureDebianImage(arch);
        // A build that cannot make this architecture's package fails the package's tests with its reason, not the
        // container's: the first test shows that the container itself is sound.
        built = await buildDebs([PACKAGE_VERSION], { arch }).catch((e: Error) => e);
        c = await DebianContainer.start({
          systemd: true,
          arch,
          ...(built instanceof Error ? {} : { debs: built.dir }),
        });
      }, SETUP_TIMEOUT_MS);

      afterAll(async () => {
        await c?.remove();
      }, 120_000);

      function debs(): BuiltDebs {
        if (built instanceof Error) throw built;
        return built;
      }

      it(
        `boots systemd as PID 1 on ${arch}, journal included, and runs Debian's own ${arch} programs`,
        async () => {
          await systemdBooted(c, 3 * 60_000);
          expect((await c.must('cat /proc/1/comm')).trim()).toBe('systemd');
          expect((await c.must('uname -m')).trim()).toBe(MACHINE[arch].uname);
          expect((await c.must('dpkg --print-architecture')).trim()).toBe(arch);
          // The journal is what an operator reads the agent by (journalctl -u keystone): it must run here too.
          expect((await c.exec('systemctl is-active systemd-journald')).stdout.trim()).toBe('active');
          if (arch === 'armhf') {
            // What the armhf package depends on, from the image: Debian 13's Node, running under qemu-arm.
            expect((await c.must('node -p "process.arch + \' \' + process.versions.node"')).trim()).toMatch(
              /^arm 20\.(19|[2-9]\d)\.\d+$/,
            );
          }
        },
        STEP_TIMEOUT_MS,
      );

      it(
        `dpkg -i installs the ${arch} package${arch === 'armhf' ? " on Debian 13's nodejs" : ' and keystone-node'} offline; keystone --version`,
        async () => {
          const d = debs();
          // The container reaches no mirror: every dependency is in the image or in these files.
          await c.must(`dpkg -i ${installArgs(d, PACKAGE_VERSION)}`, STEP_TIMEOUT_MS);
          expect((await c.must("dpkg-query -W -f='${Architecture}' keystone")).trim()).toBe(arch);
          expect((await c.must('keystone --version', STEP_TIMEOUT_MS)).trim()).toBe(`keystone ${PACKAGE_VERSION}`);
          const [nodeArch, version] = (
            await c.must(`${installedNode(d)} -p "process.arch + ' ' + process.versions.node"`)
          )
            .trim()
            .split(' ');
          expect(nodeArch).toBe(MACHINE[arch].node);
          const [major, minor] = version!.split('.').map(Number);
          expect(major! > 20 || (major === 20 && minor! >= 19)).toBe(true);
          if (d.node) expect((await c.must("dpkg-query -W -f='${Architecture}' keystone-node")).trim()).toBe(arch);
          await c.must(`dpkg --verify keystone${d.node ? ' keystone-node' : ''}`, STEP_TIMEOUT_MS);
          expect((await c.exec('systemctl is-enabled keystone')).stdout.trim()).toBe('disabled');
        },
        STEP_TIMEOUT_MS,
      );

      it(
        "keystone doctor passes on the example configuration (the state store's addon loads on this architecture)",
        async () => {
          await prepareExample(c, installedNode(debs()));
          await writeExampleConfig(c);
          const d = await c.exec('keystone doctor --config /etc/keystone/agent.toml --json', STEP_TIMEOUT_MS);
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
          expect(d.code, d.stdout + d.stderr).toBe(0);
        },
        STEP_TIMEOUT_MS,
      );

      it(
        'systemctl start keystone runs the example stack until its four components are healthy',
        async () => {
          await c.must('systemctl start keystone');
          const { s, mainPid } = await stackUnderUnit(
            c,
            `the example stack under systemd on ${arch}`,
            undefined,
            STACK_DEADLINE_MS,
          );
          expect(s.components.map((x) => x.name).sort()).toEqual(['api', 'influxdb', 'telemetry', 'web']);
          expect(mainPid).not.toBe('0');
          // The components are the agent's children, in the unit's control group (which KillMode=process leaves alone).
          for (const comp of s.components)
            expect(await c.must(`cat /proc/${comp.pid}/cgroup`)).toMatch(/keystone\.service/);
        },
        STEP_TIMEOUT_MS,
      );

      it(
        'systemctl restart keystone: the new agent adopts every component, none restarted',
        async () => {
          const { s, mainPid } = await stackUnderUnit(c, 'the stack before the restart', undefined, STACK_DEADLINE_MS);
          const before = await identities(c, s);
          await c.must('systemctl restart keystone');
          const after = await stackUnderUnit(
            c,
            `the restarted agent to adopt the stack on ${arch}`,
            mainPid,
            STACK_DEADLINE_MS,
          );
          expect(after.mainPid).not.toBe(mainPid);
          expect(await identities(c, after.s)).toEqual(before);
          // The journal has the agent's account of it (journald takes the lines in its own time): one adoption per
          // component, all from the second agent.
          const adoptions = await pollUntil('the adoptions in the journal', 60_000, async () => {
            const n = Number(
              (
                await c.must("journalctl -u keystone --no-pager -o cat | grep -c 'adopted running instance' || true")
              ).trim(),
            );
            return n >= 4 ? n : undefined;
          });
          expect(adoptions).toBe(4);
        },
        STEP_TIMEOUT_MS,
      );
    },
  );
}

// No emulation needed: dpkg reads the package's Architecture field and refuses it before running anything of it.
const foreign: DebianArch = hostArch() === 'arm64' ? 'armhf' : 'arm64';
const rf = needs('docker', 'debootstrap', 'dpkg-deb', 'root');

describe.skipIf(rf.skip)(rf.title(`the ${foreign} package on this machine's Debian (${hostArch()})`), () => {
  let debs: BuiltDebs;
  let c: DebianContainer;

  beforeAll(async () => {
    await ensureDebianImage();
    debs = await buildDebs([PACKAGE_VERSION], { arch: foreign });
    c = await DebianContainer.start({ systemd: false, debs: debs.dir });
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await c?.remove();
  }, 120_000);

  it('dpkg -i refuses it for its architecture and installs nothing', async () => {
    for (const file of [debs.files[PACKAGE_VERSION]!, ...(debs.node ? [debs.node] : [])]) {
      const i = await c.exec(`dpkg -i /debs/${file}`);
      expect(i.code, file).not.toBe(0);
      expect(i.stderr, file).toMatch(
        new RegExp(`package architecture \\(${foreign}\\) does not match system \\(${hostArch()}\\)`),
      );
    }
    expect((await c.exec("dpkg-query -W -f='${Status}' keystone")).stdout).not.toMatch(/installed/);
    expect((await c.exec('test -e /usr/bin/keystone || test -e /usr/lib/keystone')).code).not.toBe(0);
  }, 120_000);
});
