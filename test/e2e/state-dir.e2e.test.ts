// The state directory end to end, with the real agent (bin/keystone.js): files another user planted are refused
// before anything is read, a link planted under it never redirects the (root) agent's writes, one agent holds it at a
// time (a second names the first's pid and touches nothing; kill -9 frees it), and an API address in use stops the
// start before anything is adopted.
import { spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSameProcess } from '../../src/runtime/proc-identity.js';
import { AgentHarness, AgentProcess, is, processesUnder } from '../support/agent-harness.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';
import { freePorts, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { withStack } from '../support/with-stack.js';

/** "Another user": nobody. The tests run as root, which may chown to it. */
const NOBODY = 65534;
/** Planting another user's token takes chown to nobody, which only root may do. */
const root = needs('root');

const withAgents = (body: (fx: StackFixture, h: AgentHarness) => Promise<void>) =>
  withStack({ components: () => [sleeper('db')] }, body);

const start = (h: AgentHarness, fx: StackFixture, args: string[] = []) =>
  h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args });

/** The one line a refused start writes to stderr. */
function oneLine(agent: AgentProcess): string {
  const lines = agent.stderr.split('\n').filter(Boolean);
  expect(lines, agent.stderr).toHaveLength(1);
  return lines[0]!;
}

/**
 * Holds a TCP port. Whoever connects meanwhile (another test's keystonectl trying the default agent address) is cut
 * off at once, so that nothing waits on this test and closing never waits on a connection.
 */
function listen(port: number, host = '127.0.0.1'): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer((socket) => socket.destroy());
    s.once('error', reject);
    s.listen({ host, port, exclusive: true }, () => resolve(s));
  });
}

const close = (s: Server) => new Promise<void>((r) => s.close(() => r()));

describe.concurrent('the state directory, end to end', { timeout: 90_000 }, () => {
  it.skipIf(root.skip)(
    root.title(
      'refuses a state directory others can write, and then a token another user planted in it (exit 2, the fix named); starts once both are fixed',
    ),
    async () => {
      await withAgents(async (fx, h) => {
        const token = join(h.stateDir, 'api-token');
        chmodSync(h.stateDir, 0o777);
        writeFileSync(token, `${'a'.repeat(64)}\n`, { mode: 0o600 });
        chownSync(token, NOBODY, NOBODY);

        const first = start(h, fx, ['--listen', '127.0.0.1:0']);
        expect((await first.waitForExit()).code).toBe(2);
        const line = oneLine(first);
        expect(line).toContain('[KS_STATE_DIR_UNSAFE]');
        expect(line).toContain(`state directory ${h.stateDir} is writable by other users (mode 777)`);
        expect(line).toContain(`chown root: ${h.stateDir} && chmod 711 ${h.stateDir}`);
        // Nothing was read or made: no store, no lock, and nobody's token is still just that.
        expect(readdirSync(h.stateDir)).toEqual(['api-token']);

        // The directory fixed, the planted token is still refused: it is never used, on this start or a later one.
        chmodSync(h.stateDir, 0o711);
        const second = start(h, fx, ['--listen', '127.0.0.1:0']);
        expect((await second.waitForExit()).code).toBe(2);
        expect(oneLine(second)).toMatch(
          new RegExp(
            `${token} is owned by uid ${NOBODY} \\(nobody\\), not by the agent's user uid 0 \\(root\\).*remove it.*\\[KS_STATE_DIR_UNSAFE\\]`,
          ),
        );
        expect(existsSync(join(h.stateDir, 'state.db'))).toBe(false);

        rmSync(token);
        const third = start(h, fx, ['--listen', '127.0.0.1:0']);
        await third.waitForLog(is.msg('created the API token'), 15_000, 0, 'a token of its own');
        await third.waitForLog(is.applyEnd, 30_000, 0, 'the first apply');
        await third.stop();
      });
    },
  );

  it('a components/web/logs link into a root-only directory: refused at start, and when it appears later the component fails and nothing is written there', async () => {
    const secret = mkdtempSync(join(tmpdir(), 'keystone-root-only-'));
    chmodSync(secret, 0o700);
    try {
      await withAgents(async (fx, h) => {
        // Planted before the start: the agent refuses to start, naming it.
        mkdirSync(join(h.stateDir, 'components', 'web'), { recursive: true });
        symlinkSync(secret, join(h.stateDir, 'components', 'web', 'logs'));
        const refused = start(h, fx);
        expect((await refused.waitForExit()).code).toBe(2);
        expect(oneLine(refused)).toMatch(
          new RegExp(`${h.stateDir}/components/web/logs is a symbolic link.*remove it.*\\[KS_STATE_DIR_UNSAFE\\]`),
        );

        // Planted while the agent runs, before `web` first starts: the start fails clearly, the link is not followed.
        rmSync(join(h.stateDir, 'components'), { recursive: true });
        const agent = start(h, fx);
        await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply');
        mkdirSync(join(h.stateDir, 'components', 'web'), { mode: 0o755 });
        symlinkSync(secret, join(h.stateDir, 'components', 'web', 'logs'));
        const mark = agent.mark();
        fx.add(sleeper('web'));
        await agent.waitForLog(is.applyEnd, 30_000, mark, 'the apply that adds web');
        expect(readdirSync(secret)).toEqual([]);
        expect(agent.lines(is.state('web', 'failed'), mark).map((l) => l.reason)).toEqual([
          `start failed: ${h.stateDir}/components/web/logs is a symbolic link: the agent follows no link on the way to its files (give the real path, or remove the link)`,
        ]);
        // Its neighbour runs on.
        expect(h.component('db')?.state).toBe('running');
      });
    } finally {
      rmSync(secret, { recursive: true, force: true });
    }
  });

  it("a second agent on the same state directory exits naming the first one's pid and touches nothing; after kill -9 of the first, a new one starts and adopts", async () => {
    await withAgents(async (fx, h) => {
      const first = start(h, fx);
      await first.waitForLog(is.applyEnd, 30_000, 0, 'the first apply');
      const db = h.component('db')!.instance as { kind: 'process'; pid: number; startTime: string };
      const applies = h.history().length;

      const second = start(h, fx);
      expect((await second.waitForExit()).code).toBe(1);
      expect(oneLine(second)).toBe(
        `keystone agent: another agent (pid ${first.pid}) is using the state directory ${h.stateDir}: stop it first, or give this agent its own --state-dir [KS_STATE_DIR_LOCKED]`,
      );
      expect(second.logs.filter((l) => l.module === 'supervisor' || l.msg === 'adopted running instance')).toEqual([]);
      expect(isSameProcess(db.pid, db.startTime)).toBe(true);
      expect(h.component('db')!.instance).toEqual(db);
      expect(h.history()).toHaveLength(applies);
      expect(first.exit).toBeUndefined();

      // kill -9 leaves no lock behind: the next agent takes the directory and adopts db as it runs.
      await first.kill9();
      const third = start(h, fx);
      const adopted = await third.waitForLog(is.about('db', 'adopted running instance'), 15_000, 0, 'db adopted');
      expect(adopted.pid).toBe(db.pid);
      await third.stop();
    });
  });

  it('an API address in use stops the start with KS_API_LISTEN_FAILED before anything is adopted', async () => {
    await withAgents(async (fx, h) => {
      const first = start(h, fx);
      await first.waitForLog(is.applyEnd, 30_000, 0, 'the first apply');
      const db = h.component('db')!.instance as { kind: 'process'; pid: number; startTime: string };
      await first.kill9();

      const [port] = (await freePorts(1)) as [number];
      const blocker = await listen(port);
      try {
        const busy = start(h, fx, ['--listen', `127.0.0.1:${port}`]);
        expect((await busy.waitForExit()).code).toBe(1);
        // Before it tried the address, an agent used to adopt (and could restart or sweep) what the last one left.
        expect(busy.lines(is.msg('adopted running instance'))).toEqual([]);
        expect(oneLine(busy)).toBe(
          `keystone agent: the HTTP API cannot listen on 127.0.0.1:${port}: the address is in use (another agent or program listens on it); pass --listen HOST:PORT for another address, or --listen none to run without the TCP API [KS_API_LISTEN_FAILED]`,
        );
        expect(h.component('db')!.instance).toEqual(db);
        expect(isSameProcess(db.pid, db.startTime)).toBe(true);
      } finally {
        await close(blocker);
      }
      // The lock went with the failed start: the next agent adopts db.
      const next = start(h, fx);
      await next.waitForLog(is.about('db', 'adopted running instance'), 15_000, 0, 'db adopted');
      await next.stop();
    });
  });

  it('the default API address in use is an error too, not a warning that turns the API off', async () => {
    const fx = await stackFixture({ components: () => [sleeper('db')] });
    const stateDir = mkdtempSync(join(tmpdir(), 'keystone-default-listen-'));
    // Held by this test, or by something else on the machine: busy either way.
    const blocker = await listen(8080).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') return undefined;
      throw e;
    });
    let agent: AgentProcess | undefined;
    try {
      const argv = [
        join(PROJECT_ROOT, 'bin', 'keystone.js'),
        'agent',
        '--dir',
        fx.dir,
        '--plan',
        fx.plan,
        '--allow-unsigned',
        '--state-dir',
        stateDir,
        '--log-format',
        'json',
      ];
      agent = new AgentProcess(spawn(process.execPath, argv, { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
      const exit = await agent.waitForExit();
      expect(exit.code, agent.tail()).toBe(1);
      expect(oneLine(agent)).toContain('the HTTP API cannot listen on 127.0.0.1:8080: the address is in use');
      expect(oneLine(agent)).toContain('--listen none');
      expect(existsSync(join(stateDir, 'state.db'))).toBe(false);
      expect(processesUnder(stateDir)).toEqual([]);
    } finally {
      // An agent that started anyway (the old warning) must not outlive the test, nor its components.
      if (agent && !agent.exit) await agent.kill9();
      for (const p of processesUnder(stateDir)) process.kill(p.pid, 'SIGKILL');
      if (blocker) await close(blocker);
      rmSync(stateDir, { recursive: true, force: true });
      fx.cleanup();
    }
  });
});
