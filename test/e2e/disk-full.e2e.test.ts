// Issue 18, a full disk: the state directory (store, artifact cache, work and log directories: all under it) on a
// small tmpfs that fills up under a running agent. The agent must say so with a stable code, keep running what it
// ran (same pids, no exit), recover once space returns, and leave a store that passes PRAGMA integrity_check.
// One scenario per fault; root only (mount).
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { isAlive } from '../../src/runtime/proc-identity.js';
import { STATE_DB_FILE } from '../../src/store/state-store.js';
import { AgentHarness, is, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { needs } from '../support/requirements.js';
import {
  fourStack,
  freePorts,
  sleeper,
  stackFixture,
  type ComponentSpec,
  type StackFixture,
} from '../support/stack-fixture.js';
import { mountSmallFilesystem, type SmallFilesystem } from '../reliability/small-filesystem.js';
import { apiOf, probeCount, type AgentApi } from '../support/agent-api.js';

const root = needs('root');
const MiB = 1024 * 1024;

/** Components that write nothing once started (influxdb's stand-in writes its record at start), so that only the
 * agent meets the full disk: one with an http check probed every 200 ms, and a plain sleeper. */
const steady = (p: Parameters<typeof fourStack>[0]): ComponentSpec[] => [fourStack(p)[0]!, sleeper('lone')];

interface World {
  fx: StackFixture;
  h: AgentHarness;
  disk: SmallFilesystem;
  agent: AgentProcess;
  api: AgentApi;
  port: number;
  /** The pids of the first apply, by component. */
  pids: Record<string, number>;
}

/** A stack on a tmpfs state directory of `size`, applied and running; always unmounted and removed. */
async function withFullDiskWorld(
  size: number,
  components: typeof steady,
  body: (w: World) => Promise<void>,
  args: string[] = [],
  artifacts: Record<string, Uint8Array> = {},
): Promise<void> {
  const fx = await stackFixture({ signed: false, components, artifacts });
  const h = new AgentHarness();
  let disk: SmallFilesystem | undefined;
  try {
    disk = mountSmallFilesystem(h.stateDir, size);
    const [port] = (await freePorts(1)) as [number];
    const agent = h.start({
      dir: fx.dir,
      plan: fx.plan,
      trustArgs: fx.trustArgs,
      args: ['--listen', `127.0.0.1:${port}`, ...args],
    });
    const end = await agent.waitForLog(is.applyEnd, 40_000, 0, 'the first apply');
    expect(end.msg, agent.tail()).toBe('all components running');
    await body({ fx, h, disk, agent, api: apiOf(h.stateDir, port), port, pids: h.pidsOf() });
  } finally {
    await teardown(h, disk, fx);
  }
}

/** The harness kills every process and empties the state directory; the mount point is unmounted whatever it says. */
async function teardown(h: AgentHarness, disk: SmallFilesystem | undefined, fx: StackFixture): Promise<void> {
  let failure: unknown;
  // Removing the mount point itself fails (EBUSY) while it is mounted: expected.
  await h.cleanup().catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'EBUSY') failure = e;
  });
  disk?.unmount();
  rmSync(h.stateDir, { recursive: true, force: true });
  fx.cleanup();
  if (failure) throw failure;
}

/** Every component of the first apply still runs as the very process it ran as (nothing restarted). */
function expectSamePids(w: World): void {
  expect(w.agent.exit, `the agent exited\n${w.agent.tail()}`).toBeUndefined();
  for (const [name, pid] of Object.entries(w.pids)) {
    expect(isAlive(pid), `${name} (pid ${pid}) is alive`).toBe(true);
    expect(w.h.pidsOf()[name], `${name}'s recorded pid`).toBe(pid);
  }
  expect(
    w.agent.lines((l) => l.msg === 'exited'),
    'component exits',
  ).toEqual([]);
}

/** The store, opened after the agent stopped: SQLite's own check of every page and index. */
function expectStoreIntact(h: AgentHarness): void {
  const db = new Sqlite(join(h.stateDir, STATE_DB_FILE), { readonly: true, fileMustExist: true });
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  } finally {
    db.close();
  }
}

/** Polls `ok` every 100 ms until it holds; fails at the deadline with `what`. */
async function until(ok: () => boolean, what: string, deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const errCode = (l: LogLine): unknown => (l.err as { code?: unknown } | undefined)?.code;

describe.skipIf(root.skip)(root.title('a full disk under a running agent'), { timeout: 150_000 }, () => {
  it('fault: the disk is full when a new revision comes: refused to write with KS_STATE_DISK_FULL, nothing restarts, applied on sync once space returns', async () => {
    await withFullDiskWorld(16 * MiB, steady, async (w) => {
      w.disk.fill();
      const mark = w.agent.mark();
      w.fx.add(fourStack(w.fx.ports)[1]!); // api: an artifact to install, rows to write
      const rev = await w.fx.revisionId();
      const failed = await w.agent.waitForLog(
        is.revision(rev, 'revision failed unexpectedly'),
        20_000,
        mark,
        'the failure of the new revision',
      );
      expect(errCode(failed)).toBe('KS_STATE_DISK_FULL');
      await w.agent.waitForLog(is.msgIncludes('tried again at the next look'), 5_000, mark, 'the promise of a retry');
      // Still running the previous revision, supervised: its health checks go on (influxdb's, every 200 ms) and
      // nothing restarts.
      expect(w.h.appliedRevision()?.id).not.toBe(rev);
      const probesBefore = await probeCount(w.port, 'influxdb');
      await new Promise((r) => setTimeout(r, 1_500)); // a window for probes, and for an exit or a restart that must not come
      expect((await probeCount(w.port, 'influxdb')) - probesBefore).toBeGreaterThanOrEqual(2);
      expectSamePids(w);
      expect(w.h.component('influxdb')?.state).toBe('running');

      // Space returns; the operator asks the agent to look (keystonectl sync): the same revision is applied now.
      w.disk.drain();
      const again = w.agent.mark();
      const outcome = await w.api.post('/v1/sync?wait=done');
      expect(outcome.status, JSON.stringify(outcome.body)).toBe(200);
      expect(outcome.body).toMatchObject({ outcome: 'applied', revision: rev });
      await w.agent.waitForLog(is.applyEnd, 20_000, again, 'the apply after the space returned');
      expect(w.h.appliedRevision()?.id).toBe(rev);
      expect(w.h.component('api')?.state).toBe('running');
      expectSamePids(w);
      await w.agent.stop();
      expectStoreIntact(w.h);
    });
  });

  it('fault: a revision whose artifacts do not fit: refused before anything stops (KS_DISK_SPACE, what it needs and what is free), applied on sync once space returns', async () => {
    // 2 MiB of artifact, 1 MiB of slack: the store can record, the download cannot be had.
    const big: ComponentSpec = { name: 'big', version: '1.0.0', command: 'sleep', args: ['1000'], artifact: 'big.bin' };
    await withFullDiskWorld(
      16 * MiB,
      steady,
      async (w) => {
        w.disk.fill(MiB);
        const mark = w.agent.mark();
        w.fx.add(big);
        const rev = await w.fx.revisionId();
        const refused = await w.agent.waitForLog(
          is.revision(rev, 'revision refused; still running the previous one'),
          30_000,
          mark,
          'the refusal',
        );
        expect(refused.reason).toMatch(
          /^KS_DISK_SPACE: this revision's downloads do not fit on the disk: big's artifacts ran out of space in .* \(\d+\.\d MiB free\).*nothing was stopped/,
        );
        expect(w.h.history()[0]).toMatchObject({ revision: rev, outcome: 'rejected' });
        expect(w.agent.lines(is.msg('reconcile plan'), mark)).toEqual([]);
        expect(w.h.component('big')).toBeUndefined();
        expectSamePids(w);

        // Space returns; keystonectl sync tries the same revision again (a refusal for space passes, as one for the clock).
        w.disk.drain();
        const again = w.agent.mark();
        const outcome = await w.api.post('/v1/sync?wait=done');
        expect(outcome.status, JSON.stringify(outcome.body)).toBe(200);
        await w.agent.waitForLog(is.applyEnd, 20_000, again, 'the apply after the space returned');
        expect(w.h.appliedRevision()?.id).toBe(rev);
        expect(w.h.component('big')?.state).toBe('running');
        expectSamePids(w);
        await w.agent.stop();
        expectStoreIntact(w.h);
      },
      [],
      { 'big.bin': new Uint8Array(2 * MiB).fill(7) },
    );
  });

  it('fault: the disk fills during an install: the apply is recorded failed, the rest keeps running, a restart of the component succeeds once space returns', async () => {
    // 512 KiB of slack: the store can record, the 4 MiB the install script writes cannot be had. The script cleans up
    // after itself (else its partial file would take the slack, and the store's room with it: the first scenario).
    const filler: ComponentSpec = {
      name: 'filler',
      version: '1.0.0',
      command: 'sleep',
      args: ['1000'],
      install: 'head -c 4194304 /dev/zero > blob || { rm -f blob; exit 1; }',
    };
    await withFullDiskWorld(16 * MiB, steady, async (w) => {
      w.disk.fill(512 * 1024);
      const mark = w.agent.mark();
      w.fx.add(filler);
      const rev = await w.fx.revisionId();
      const end = await w.agent.waitForLog(is.applyEnd, 30_000, mark, 'the end of the apply on a full disk');
      expect(end.msg).toMatch(/^apply failed/);
      const entry = w.h.history()[0]!;
      expect(entry).toMatchObject({ revision: rev, outcome: 'failure' });
      expect(entry.summary).toMatch(/filler/);
      expect(w.h.component('filler')?.state).toBe('failed');
      expect(w.h.component('filler')?.reason).toMatch(/install script of filler exited/);
      expectSamePids(w);

      w.disk.drain();
      const again = w.agent.mark();
      const r = await w.api.post('/v1/components/filler:restart');
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      await w.agent.waitForLog(is.state('filler', 'running'), 20_000, again, 'filler running after space returned');
      expectSamePids(w);
      await w.agent.stop();
      expectStoreIntact(w.h);
    });
  });

  it("fault: a component's own log fills the disk: the rotation truncates it without a copy (KS_LOG_NO_SPACE), space returns, every component keeps running", async () => {
    // About 1.3 MB/s on stdout, a rate a shell loop keeps up without taking a core; a failed write (ENOSPC) ends one
    // round, not the loop.
    const chatty: ComponentSpec = {
      name: 'chatty',
      version: '1.0.0',
      command: 'sh',
      args: ['-c', 'while :; do head -c 65536 /dev/zero | tr "\\0" x; echo; sleep 0.05; done'],
    };
    const components = (p: Parameters<typeof fourStack>[0]) => [...steady(p), chatty];
    await withFullDiskWorld(
      16 * MiB,
      components,
      async (w) => {
        // 3 MiB left: the log passes --log-max-bytes (2 MiB) and takes the rest; a copy of it can no longer be made.
        w.disk.fill(3 * MiB);
        const mark = w.agent.mark();
        await until(() => w.disk.free() < 64 * 1024, 'the log to fill the disk', 20_000);
        // The agent looks at log sizes every 30 s.
        const truncated = await w.agent.waitForLog(
          is.about('chatty', 'the file system is full: log truncated without keeping a copy'),
          60_000,
          mark,
          'the truncation',
        );
        expect(truncated.code).toBe('KS_LOG_NO_SPACE');
        await until(() => w.disk.free() > 2 * MiB, 'space to come back', 5_000);
        expectSamePids(w);
        // chatty writes on at the start of its truncated log.
        const log = join(w.h.stateDir, 'components', 'chatty', 'logs', 'stdout.log');
        await until(() => statSync(log).size > 64 * 1024, 'chatty to write again', 10_000);
        await w.agent.stop();
        expectStoreIntact(w.h);
      },
      ['--log-max-bytes', String(2 * MiB), '--log-keep', '1'],
    );
  });

  it('fault: the agent restarts on a full disk: it comes up, adopts every component (same pids), and resumes the revision it runs once space returns', async () => {
    // What an operator expects of a restart (a reboot, a package upgrade) on a full disk: nothing that runs is
    // touched, and the agent stays up to say what is wrong, rather than an exit loop under systemd.
    await withFullDiskWorld(16 * MiB, steady, async (w) => {
      w.disk.fill();
      expect((await w.agent.stop()).code).toBe(0);
      w.agent = w.h.start({
        dir: w.fx.dir,
        plan: w.fx.plan,
        trustArgs: w.fx.trustArgs,
        args: ['--listen', `127.0.0.1:${w.port}`],
      });
      await w.agent.waitForLog(is.msg('agent started'), 20_000, 0, 'the start on a full disk');
      for (const name of Object.keys(w.pids))
        await w.agent.waitForLog(is.about(name, 'adopted running instance'), 1_000, 0, `${name} adopted`);
      // The directory source offers the revision at start: the store cannot record its apply; nothing is restarted.
      const failed = await w.agent.waitForLog(is.msg('revision failed unexpectedly'), 20_000, 0, 'the failed apply');
      expect(errCode(failed)).toBe('KS_STATE_DISK_FULL');
      expectSamePids(w);
      // Space returns; keystonectl sync: the revision it runs is resumed now (SPEC §5: its outcome stands, no new row,
      // no new report); still nothing restarts.
      const rows = w.h.history();
      w.disk.drain();
      const again = w.agent.mark();
      const outcome = await w.api.post('/v1/sync?wait=done');
      expect(outcome.body).toMatchObject({
        outcome: 'unchanged',
        revision: w.h.appliedRevision()?.id,
        appliedOutcome: 'success',
      });
      const end = await w.agent.waitForLog(is.applyEnd, 20_000, again, 'the resume after space returned');
      expect(end.msg).toBe('resumed the revision applied last: its outcome stands (success); all components running');
      expect(w.h.history()).toEqual(rows);
      expectSamePids(w);
      await w.agent.stop();
      expectStoreIntact(w.h);
    });
  });

  it('fault: a component crashes while the disk is full: its restart waits for the store, and happens once space returns', async () => {
    await withFullDiskWorld(16 * MiB, steady, async (w) => {
      w.disk.fill();
      const mark = w.agent.mark();
      process.kill(w.pids.lone!, 'SIGKILL');
      await w.agent.waitForLog(is.about('lone', 'exited'), 10_000, mark, 'the exit');
      const held = await w.agent.waitForLog(
        is.about('lone', 'cannot record the exit: the restart waits until the state store can write'),
        10_000,
        mark,
        'the delayed restart',
      );
      expect(errCode(held)).toBe('KS_STATE_DISK_FULL');
      w.disk.drain();
      const back = await w.agent.waitForLog(is.state('lone', 'running'), 20_000, mark, 'lone running again');
      expect(back.pid ?? w.h.pidsOf().lone).not.toBe(w.pids.lone);
      expect(w.h.component('lone')).toMatchObject({ state: 'running', restarts: 1 });
      // The neighbour was never touched.
      expect(w.h.pidsOf().influxdb).toBe(w.pids.influxdb);
      expect(w.agent.exit).toBeUndefined();
      await w.agent.stop();
      expectStoreIntact(w.h);
    });
  });
});
