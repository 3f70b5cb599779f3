// Issue 34 (the second hour): keystonectl finds the token of the agent `npm start` runs. `npm start` keeps the agent's
// state in `.state/` of the checkout; run from there with no --token, --state-dir or KEYSTONE_TOKEN (and no readable
// /var/lib/keystone/api-token), keystonectl reads `./.state/api-token`. Where it finds none, the agent's refusal says
// every file it looked in and names --state-dir. Against the real agent (bin/keystone.js from dist/), started with
// --state-dir <dir>/.state, and keystonectl run with <dir> as its working directory.
import { execFile } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  constants,
  linkSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_STATE_DIR, resolveToken } from '../../src/cli/agent-token.js';
import { AgentHarness, is } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { freePorts, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const UNSIGNED =
  'keystonectl status: WARNING: the applied revision is UNSIGNED: signatures are not checked (development only)\n';
const DEVICE_TOKEN = join(DEFAULT_STATE_DIR, 'api-token');
/** A machine that is a device (its agent's token readable here) would send that token first: not this test's case. */
const deviceTokenReadable = (() => {
  try {
    accessSync(DEVICE_TOKEN, constants.R_OK);
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(deviceTokenReadable)(
  'keystonectl in a checkout finds the token of the agent `npm start` runs',
  { timeout: 90_000 },
  () => {
    let fx: StackFixture;
    let h: AgentHarness;
    let url: string;
    /** The "checkout": the directory keystonectl runs in, the agent's state in its `.state/`. */
    let checkout: string;
    const elsewhere: string[] = [];
    const ctlIn = (cwd: string, ...args: string[]) => runCtl([...args, '--agent', url], cwd);

    beforeAll(async () => {
      fx = await stackFixture({
        components: () => [sleeper('db'), sleeper('web', [{ component: 'db', type: 'hard' }])],
      });
      h = new AgentHarness();
      // Inside the harness's directory, so that its cleanup finds every process working under the state directory;
      // traversable, as a checkout is, for the components' run user.
      checkout = h.stateDir;
      chmodSync(checkout, 0o755);
      url = `http://127.0.0.1:${(await freePorts(1))[0]}`;
      const agent = h.start({
        dir: fx.dir,
        plan: fx.plan,
        trustArgs: fx.trustArgs,
        args: ['--state-dir', join(checkout, '.state'), '--listen', url.slice('http://'.length), '--stop-on-exit'],
      });
      await agent.waitForLog(is.msg('all components running'), 30_000, 0, 'the first apply');
      await agent.waitForLog(is.msg('HTTP API listening'), 15_000, 0, 'the API');
    });
    afterAll(async () => {
      await h?.cleanup();
      fx?.cleanup();
      for (const d of elsewhere) rmSync(d, { recursive: true, force: true });
    });

    const emptyDir = () => {
      const d = mkdtempSync(join(tmpdir(), 'keystonectl-elsewhere-'));
      elsewhere.push(d);
      return d;
    };

    it('status and stop/start from the checkout: the token read from ./.state/api-token, no flag, no environment', async () => {
      const status = await ctlIn(checkout, 'status');
      // The fixture is unsigned: that warning, and nothing else.
      expect(status.stderr).toBe(UNSIGNED);
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(/^agent pid \d+ /);
      expect(status.stdout).toMatch(/\ndb +running /);
      expect(await ctlIn(checkout, 'stop', 'web')).toMatchObject({ code: 0, stderr: '' });
      expect(await ctlIn(checkout, 'start', 'web')).toMatchObject({ code: 0, stderr: '' });
    });

    it('logs from the checkout reads ./.state too (the same state directory as the token)', async () => {
      const r = await runCtl(['logs', 'db'], checkout);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
    });

    it('the program as a user runs it: `keystonectl status` in the checkout, KEYSTONE_TOKEN unset', async () => {
      const env = { ...process.env };
      delete env.KEYSTONE_TOKEN;
      const { stdout, stderr } = await promisify(execFile)(
        process.execPath,
        [join(PROJECT_ROOT, 'bin', 'keystonectl.js'), 'status', '--agent', url],
        { cwd: checkout, env, timeout: 30_000 },
      );
      expect(stderr).toBe(UNSIGNED);
      expect(stdout).toMatch(/\nweb +running /);
    });

    it('no token anywhere: exit 1, saying every file it looked in and naming --state-dir', async () => {
      const dir = emptyDir();
      const r = await ctlIn(dir, 'status');
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(
        `no token was sent: pass --token, set KEYSTONE_TOKEN, or run as a user who can read the token file (looked in ${DEVICE_TOKEN} (`,
      );
      expect(r.stderr).toContain(` and ${join(dir, '.state', 'api-token')} (ENOENT))`);
      expect(r.stderr).toContain('pass its --state-dir DIR');
      // And --state-dir is the way out.
      expect((await ctlIn(dir, 'status', '--state-dir', join(checkout, '.state'))).code).toBe(0);
    });

    it("a ./.state/api-token that is not this agent's: exit 1, naming the file the token came from", async () => {
      const dir = emptyDir();
      mkdirSync(join(dir, '.state'), { mode: 0o700 });
      writeFileSync(join(dir, '.state', 'api-token'), 'not-the-token\n', { mode: 0o600 });
      const r = await ctlIn(dir, 'status');
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`the token sent was read from ${join(dir, '.state', 'api-token')}`);
      expect(r.stderr).toContain('--state-dir DIR');
    });

    // The review: a directory someone else prepared (a cloned repository, an unpacked archive) must not make keystonectl
    // send a file of this user's as its token. Only a `.state` as the agent makes it is used: this user's, not readable or writable by others (the agent's is 0711), not a
    // link, its token a file of one link, 0600.
    it('a ./.state/api-token that is a link to another file is not read, nor sent: the refusal says why', async () => {
      const dir = emptyDir();
      mkdirSync(join(dir, '.state'), { mode: 0o700 });
      const secret = join(dir, 'private-file');
      writeFileSync(secret, 'a-secret-of-this-user\n', { mode: 0o600 });
      symlinkSync(secret, join(dir, '.state', 'api-token'));
      const r = await ctlIn(dir, 'status');
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${join(dir, '.state', 'api-token')} (a symbolic link, not used)`);
      expect(r.stderr).not.toContain('the token sent was read from');
    });

    it('a ./.state or token file others can read or write, or a linked .state, is not used', async () => {
      const cases: [string, (d: string) => void, string][] = [
        [
          'a token of mode 0644 (as a clone would make it)',
          (d) => {
            mkdirSync(join(d, '.state'), { mode: 0o700 });
            writeFileSync(join(d, '.state', 'api-token'), 'x\n', { mode: 0o644 });
          },
          "mode 644, not the agent's 0600, not used",
        ],
        [
          'a .state of mode 0755',
          (d) => {
            mkdirSync(join(d, '.state'), { mode: 0o755 });
            chmodSync(join(d, '.state'), 0o755);
            writeFileSync(join(d, '.state', 'api-token'), 'x\n', { mode: 0o600 });
          },
          "mode 755, not the agent's 0711, not used",
        ],
        [
          'a .state that is a link to the real one',
          (d) => symlinkSync(join(checkout, '.state'), join(d, '.state')),
          'a symbolic link, not used',
        ],
        [
          'a token file with a second link',
          (d) => {
            mkdirSync(join(d, '.state'), { mode: 0o700 });
            writeFileSync(join(d, 'other'), 'x\n', { mode: 0o600 });
            linkSync(join(d, 'other'), join(d, '.state', 'api-token'));
          },
          'a file with other links, not used',
        ],
      ];
      for (const [what, make, why] of cases) {
        const dir = emptyDir();
        make(dir);
        const r = await ctlIn(dir, 'status');
        expect(r.code, what).toBe(1);
        expect(r.stderr, what).toContain(why);
        expect(r.stderr, what).not.toContain('the token sent was read from');
      }
    });

    it("the checkout's token is only for an agent on this machine: --agent elsewhere does not look in ./.state", () => {
      const io = { cwd: checkout, env: {}, stdout: process.stdout, stderr: process.stderr };
      expect(resolveToken({ agent: 'http://127.0.0.1:1' }, io)).toMatchObject({
        file: join(checkout, '.state', 'api-token'),
      });
      const far = resolveToken({ agent: 'http://192.0.2.7:8080' }, io);
      expect(far.token).toBeUndefined();
      expect(far.missing).not.toContain('.state');
    });

    it("logs from a hostile directory: a fake .state of the wrong mode is not read as the device's logs", async () => {
      const dir = emptyDir();
      mkdirSync(join(dir, '.state', 'components', 'db', 'logs'), { recursive: true, mode: 0o755 });
      writeFileSync(join(dir, '.state', 'api-token'), 'x\n', { mode: 0o644 });
      writeFileSync(join(dir, '.state', 'components', 'db', 'logs', 'stdout.log'), 'FAKE LINE\n');
      const r = await runCtl(['logs', 'db'], dir);
      expect(r.stdout).not.toContain('FAKE LINE');
    });
  },
);
