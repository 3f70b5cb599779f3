// Issue 34 (the second hour): keystonectl finds the token of the agent `npm start` runs. `npm start` keeps the agent's
// state in `.state/` of the checkout; run from there with no --token, --state-dir or KEYSTONE_TOKEN (and no readable
// /var/lib/keystone/api-token), keystonectl reads `./.state/api-token`. Where it finds none, the agent's refusal says
// every file it looked in and names --state-dir. Against the real agent (bin/keystone.js from dist/), started with
// --state-dir <dir>/.state, and keystonectl run with <dir> as its working directory.
import { execFile } from 'node:child_process';
import { accessSync, chmodSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_STATE_DIR } from '../../src/cli/agent-client.js';
import { AgentHarness, is } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { freePorts, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const UNSIGNED = 'keystonectl status: WARNING: the applied revision is UNSIGNED: signatures are not checked (development only)\n';
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

describe.skipIf(deviceTokenReadable)('keystonectl in a checkout finds the token of the agent `npm start` runs', { timeout: 90_000 }, () => {
  let fx: StackFixture;
  let h: AgentHarness;
  let url: string;
  /** The "checkout": the directory keystonectl runs in, the agent's state in its `.state/`. */
  let checkout: string;
  const elsewhere: string[] = [];
  const ctlIn = (cwd: string, ...args: string[]) => runCtl([...args, '--agent', url], cwd);

  beforeAll(async () => {
    fx = await stackFixture({ components: () => [sleeper('db'), sleeper('web', [{ component: 'db', type: 'hard' }])] });
    h = new AgentHarness();
    // Inside the harness's directory, so that its cleanup finds every process working under the state directory;
    // traversable, as a checkout is, for the components' run user.
    checkout = h.stateDir;
    chmodSync(checkout, 0o755);
    url = `http://127.0.0.1:${(await freePorts(1))[0]}`;
    const agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--state-dir', join(checkout, '.state'), '--listen', url.slice('http://'.length), '--stop-on-exit'] });
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
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(PROJECT_ROOT, 'bin', 'keystonectl.js'), 'status', '--agent', url], { cwd: checkout, env, timeout: 30_000 });
    expect(stderr).toBe(UNSIGNED);
    expect(stdout).toMatch(/\nweb +running /);
  });

  it('no token anywhere: exit 1, saying every file it looked in and naming --state-dir', async () => {
    const dir = emptyDir();
    const r = await ctlIn(dir, 'status');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`no token was sent: pass --token, set KEYSTONE_TOKEN, or run as a user who can read the token file (looked in ${DEVICE_TOKEN} (`);
    expect(r.stderr).toContain(` and ${join(dir, '.state', 'api-token')} (ENOENT))`);
    expect(r.stderr).toContain('pass its --state-dir DIR');
    // And --state-dir is the way out.
    expect((await ctlIn(dir, 'status', '--state-dir', join(checkout, '.state'))).code).toBe(0);
  });

  it("a ./.state/api-token that is not this agent's: exit 1, naming the file the token came from", async () => {
    const dir = emptyDir();
    mkdirSync(join(dir, '.state'));
    writeFileSync(join(dir, '.state', 'api-token'), 'not-the-token\n', { mode: 0o600 });
    const r = await ctlIn(dir, 'status');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`the token sent was read from ${join(dir, '.state', 'api-token')}`);
    expect(r.stderr).toContain('--state-dir DIR');
  });
});
