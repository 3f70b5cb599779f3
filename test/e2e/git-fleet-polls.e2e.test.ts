// The real agent (bin/keystone.js) following a server repository whose HEAD names a branch that does not exist (a
// bare repository made with `master` while the fleet pushes `main`): it deploys main. Restarted with that commit
// running, it waits for its place in the poll interval before its first look (SPEC §13) and says so; POST /v1/sync
// still looks at once.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstLookDelayMs } from '../../src/git/git-poll-delay.js';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GIT_ENV } from '../support/git-env.js';
import { fourStack, freePorts, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const run = promisify(execFile);
const git = async (cwd: string, ...args: string[]) =>
  (await run('git', ['-C', cwd, ...args], { env: GIT_ENV })).stdout.trim();
const DEVICE = 'edge-7';
const POLL_MS = 3_600_000;

let root: string;
let server: GitHttpServer;
let fx: StackFixture;
let h: AgentHarness;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-fleetpoll-'));
  server = await startGitHttpServer({ root: join(root, 'srv') });
  fx = await stackFixture({ components: (p) => fourStack(p).filter((c) => c.name === 'influxdb') });
  await git(fx.dir, 'init', '--quiet', '--initial-branch=main');
  h = new AgentHarness();
});

afterAll(async () => {
  await h?.cleanup();
  fx?.cleanup();
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function commitAndPush(bare: string, message: string): Promise<string> {
  fx.write();
  await git(fx.dir, 'add', '-A');
  await git(fx.dir, 'commit', '--quiet', '--allow-empty', '-m', message);
  await git(fx.dir, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
  return git(fx.dir, 'rev-parse', 'HEAD');
}

function start(port: number): AgentProcess {
  return h.start({
    repo: server.url('fleet'),
    plan: fx.plan,
    trustArgs: fx.trustArgs,
    args: ['--ref', 'main', '--poll', '1h', '--device', DEVICE, '--status', 'none', '--listen', `127.0.0.1:${port}`],
  });
}

describe('an agent following main on a server whose HEAD is master', { timeout: 90_000 }, () => {
  it('deploys main; after a restart it looks at its offset, or at once when asked', async () => {
    const bare = server.createRepository('fleet', 'master');
    const first = await commitAndPush(bare, 'one');
    const [port] = (await freePorts(1)) as [number];

    let agent = start(port);
    await agent.waitForLog(is.applyEnd, 30_000, 0, 'the apply of main');
    expect(agent.lines((l) => typeof l.err === 'string' && l.err.includes('Could not find HEAD'))).toEqual([]);
    expect(h.appliedRevision()?.id).toBe(first);
    await agent.stop();

    fx.spec('influxdb').version = '2.7.6';
    const second = await commitAndPush(bare, 'two');
    agent = start(port);
    const said = await agent.waitForLog(
      is.msgIncludes('first look at the Git source in'),
      20_000,
      0,
      'the first-look line',
    );
    // random is Math.random in the agent: the delay is the device's offset plus up to 10% of the interval.
    const offset = firstLookDelayMs({ device: DEVICE, pollMs: POLL_MS, running: true }, () => 0);
    expect(said.first_look_in_ms).toBeGreaterThanOrEqual(offset - 1000);
    expect(said.first_look_in_ms).toBeLessThanOrEqual(offset + POLL_MS / 10);
    await agent.waitForLog(is.msg('HTTP API listening'), 20_000, 0, 'the HTTP API');
    expect(h.appliedRevision()?.id).toBe(first); // still what ran: no look yet

    const mark = agent.mark();
    const token = readFileSync(join(h.stateDir, 'api-token'), 'utf8').trim();
    const r = await fetch(`http://127.0.0.1:${port}/v1/sync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(r.status).toBe(202);
    await agent.waitForLog(is.applyEnd, 30_000, mark, 'the apply of the second commit');
    expect(h.appliedRevision()?.id).toBe(second);
  });
});
