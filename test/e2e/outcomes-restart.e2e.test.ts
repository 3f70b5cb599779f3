// Issue 27, end to end (SPEC §5, "Outcomes are the truth, across restarts"): what a device reported for a revision is
// what happened, however often its agent is restarted (SIGTERM, kill -9). Real agents (`keystone agent` as child
// processes, harness in test/support/agent-harness.ts), real component processes, a real Git smart-HTTP server
// (`git http-backend`) receiving the device's Git notes. Most cases run one process component whose health check
// never passes (tcp://127.0.0.1:1, 200 ms × 5: a start budget of 1 s): the apply fails, the instance runs on.
//
// What is read, and where (test/support/git-world.ts): the store's history and outbox rows (read-only sqlite), the note
// of each commit in the bare repository the server serves, and the notes ref's own log (one notes commit per delivered
// status, subject `keystone/<device>: <state> <commit>`): everything the device ever said, not only its last word.
//
// Each case has its own fixture, state directory, agent and server, so the cases run concurrently.
import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { historyEntries } from '../../src/cli/commands/history.js';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { until } from '../support/composite-fixture.js';
import type { ServedRequest } from '../support/git-http-server.js';
import {
  appliesOf,
  closeServer,
  failing,
  FAILED_BEFORE,
  outboxDelivered,
  outboxOf,
  outcomes,
  RESTARTS,
  RESUMED,
  startsWith,
  withGitWorld,
} from '../support/git-world.js';
import { freePorts, sleeper, stackFixture } from '../support/stack-fixture.js';

/**
 * The restarted agent is done with the revision it ran: it resumed it (the contract), or applied it again (the end of
 * an apply). Either way the store then says what the restart made of the outcome.
 */
const resumedOrApplied = (agent: AgentProcess, what: string, after = 0) =>
  agent.waitForLog((l) => startsWith(RESUMED)(l) || is.applyEnd(l), 30_000, after, what);

// Generous timeouts: the waits inside have their own, tighter deadlines.
describe.concurrent('outcomes across agent restarts (SPEC §5)', { timeout: 120_000 }, () => {
  for (const { how, down } of RESTARTS) {
    it(`directory: a failed revision stays failed after ${how} and a restart; the agent resumes it, writes no new apply, and the component stays unhealthy`, async () => {
      const fx = await stackFixture({ signed: false, components: () => [failing('never')] });
      const h = new AgentHarness();
      try {
        const [port] = (await freePorts(1)) as [number];
        const start = () =>
          h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--listen', `127.0.0.1:${port}`] });
        const rev = await fx.revisionId();
        const first = start();
        await first.waitForLog(is.msgIncludes('apply failed'), 20_000, 0, 'the failed apply');
        const [failed] = appliesOf(h, rev);
        expect(failed).toMatchObject({
          revision: rev,
          outcome: 'failure',
          failed: [{ name: 'never', reason: 'not healthy within its start budget of 1s' }],
        });
        expect(h.component('never')?.state).toBe('unhealthy');
        const pid = h.pidsOf().never;

        await down(first);
        const second = start();
        const settled = await resumedOrApplied(second, 'the restarted agent to resume the revision');

        // One finished apply for the revision, the failure it had; nothing after it says success.
        expect(
          appliesOf(h, rev).map((e) => ({ id: e.id, outcome: e.outcome })),
          `history after the restart: ${outcomes(h).join(', ')}; the restarted agent said "${settled.msg}"`,
        ).toEqual([{ id: failed!.id, outcome: 'failure' }]);
        expect(
          h.history().filter((e) => e.outcome === 'success'),
          'no success row',
        ).toEqual([]);
        expect(settled.msg).toMatch(new RegExp(`^${RESUMED}`));

        // The adopted instance was probed, not assumed healthy: still unhealthy, said so as of the restart, not restarted.
        const checked = await second.waitForLog(
          is.msg('adopted instances checked'),
          15_000,
          0,
          'the health check of the adopted instances',
        );
        expect(checked).toMatchObject({ healthy: [], unhealthy: ['never'] });
        expect(h.component('never')).toMatchObject({
          state: 'unhealthy',
          reason: expect.stringContaining('after the agent restarted'),
        });
        expect(h.pidsOf().never).toBe(pid);
        expect(appliesOf(h, rev)).toHaveLength(1);

        // As keystonectl shows it.
        await second.waitForLog(is.msg('HTTP API listening'), 15_000, 0, 'the HTTP API');
        const status = await runCtl(
          ['status', '--json', '--agent', `127.0.0.1:${port}`, '--state-dir', h.stateDir],
          fx.dir,
        );
        expect(status.code, status.stderr).toBe(0);
        const view = JSON.parse(status.stdout) as { components: Array<{ name: string; state: string }> };
        expect(view.components.find((c) => c.name === 'never')?.state).toBe('unhealthy');
        const history = await runCtl(
          ['history', '--json', '--agent', `127.0.0.1:${port}`, '--state-dir', h.stateDir],
          fx.dir,
        );
        expect(history.code, history.stderr).toBe(0);
        expect(
          historyEntries(JSON.parse(history.stdout))
            .filter((e) => e.revision === rev)
            .map((e) => e.outcome),
        ).toEqual(['failure']);
      } finally {
        await h.cleanup();
        fx.cleanup();
      }
    });
  }

  for (const { how, down } of RESTARTS) {
    it(`git: after ${how} and a restart the commit's note still says failure, and no success was ever enqueued or delivered for it`, async () => {
      await withGitWorld([failing('never')], async (w) => {
        const c = await w.push('a component that never gets healthy');
        const first = w.start();
        await w.noteSays(c, 'failure');
        await outboxDelivered(w.h, c);
        expect(appliesOf(w.h, c).map((e) => e.outcome)).toEqual(['failure']);

        await down(first);
        const second = w.start();
        const settled = await resumedOrApplied(second, `the restarted agent to resume ${c.slice(0, 12)}`);
        const rows = await outboxDelivered(w.h, c);

        expect(
          rows.map((r) => r.state),
          `statuses enqueued for the commit; the restarted agent said "${settled.msg}"`,
        ).not.toContain('success');
        expect(
          appliesOf(w.h, c).map((e) => e.outcome),
          `history: ${outcomes(w.h, c).join(', ')}`,
        ).toEqual(['failure']);
        expect((await w.note(c))?.state).toBe('failure');
        expect(await w.noted(c), 'every status the server received for the commit').not.toContain('success');
        // No new report either: the restart resumed, it did not apply.
        expect(rows.map((r) => r.state)).toEqual(['pending', 'failure']);
        expect(settled.msg).toMatch(new RegExp(`^${RESUMED}`));
        expect(w.h.component('never')?.state).toBe('unhealthy');
      });
    });
  }

  it('a recovery is its own event: the component gets healthy by itself → a `recovered` row after the failure; the note stays failure, and a restart changes neither', async () => {
    const [port] = (await freePorts(1)) as [number];
    let listener: Server | undefined;
    await withGitWorld([failing('late', '1.0.0', `tcp://127.0.0.1:${port}`)], async (w) => {
      try {
        const c = await w.push('a component that gets healthy only later');
        const first = w.start();
        await w.noteSays(c, 'failure');
        const [failed] = appliesOf(w.h, c);
        expect(failed).toMatchObject({ outcome: 'failure' });

        // Now its check passes: the health watch sees it.
        listener = createServer((s) => s.end());
        await new Promise<void>((r) => listener!.listen(port, '127.0.0.1', r));
        const mark = first.mark();
        await until(() => w.h.component('late')?.state === 'running', 15_000, 'late running once its check passes');
        const recovered = await until(
          () => w.h.history().find((e) => e.revision === c && e.outcome === 'recovered'),
          10_000,
          `a recovered history row for ${c.slice(0, 12)} (history: ${outcomes(w.h, c).join(', ')})`,
        );
        expect(recovered.id).toBeGreaterThan(failed!.id);
        expect(recovered.finishedAt).toBeDefined();
        const said = await first.waitForLog(startsWith('recovered: '), 5_000, mark, 'the recovered log line');
        expect(said).toMatchObject({ module: 'agent' });

        // The failed row stays; no success anywhere; the commit's report is still failure.
        expect(appliesOf(w.h, c).map((e) => e.outcome)).toEqual(['failure']);
        const rows = await outboxDelivered(w.h, c);
        expect(rows.map((r) => r.state)).toEqual(['pending', 'failure']);
        expect((await w.note(c))?.state).toBe('failure');

        // A restart of a recovered device: the adopted instance is healthy, and that is not a second recovery or a success.
        await first.stop();
        const second = w.start();
        await resumedOrApplied(second, 'the restarted agent to resume the commit');
        await second.waitForLog(
          is.msg('adopted instances checked'),
          15_000,
          0,
          'the health check of the adopted instances',
        );
        await until(() => w.h.component('late')?.state === 'running', 10_000, 'late running after the restart');
        expect(
          w.h
            .history()
            .filter((e) => e.revision === c)
            .reverse()
            .map((e) => e.outcome),
          `history: ${outcomes(w.h, c).join(', ')}`,
        ).toEqual(['failure', 'recovered']);
        expect((await outboxDelivered(w.h, c)).map((r) => r.state)).toEqual(['pending', 'failure']);
        expect((await w.note(c))?.state).toBe('failure');
        expect(await w.noted(c)).not.toContain('success');
      } finally {
        await closeServer(listener);
      }
    });
  });

  for (const { how, down } of RESTARTS) {
    it(`--on-failure rollback: B failed and the device went back to A; after ${how} and a restart B is not applied again and A runs on`, async () => {
      await withGitWorld([sleeper('a')], async (w) => {
        const a = await w.push('A: good');
        const first = w.start(['--on-failure', 'rollback']);
        await w.noteSays(a, 'success');

        w.fx.components = [failing('a', '2.0.0')];
        const b = await w.push('B: never healthy');
        await w.noteSays(b, 'failure');
        await until(
          () =>
            w.h.appliedRevision()?.id === a &&
            w.h.component('a')?.state === 'running' &&
            w.h.component('a')?.version === '1.0.0',
          20_000,
          'the rollback to A',
        );
        await outboxDelivered(w.h, b);
        const pidA = w.h.pidsOf().a;
        const before = outboxOf(w.h, b).length;
        expect(appliesOf(w.h, b).map((e) => e.outcome)).toEqual(['failure']);

        await down(first);
        const second = w.start(['--on-failure', 'rollback']);
        // The tip is B: the restarted agent looks at it and says it failed here before (today's code applies it again).
        const seen = await second.waitForLog(
          (l) => startsWith(FAILED_BEFORE)(l) || (l.msg === 'reconcile plan' && l.revision === b),
          30_000,
          0,
          `the restarted agent to look at B (${b.slice(0, 12)})`,
        );
        // More looks at the branch (each look is a protocol v2 ls-refs, a POST to git-upload-pack; a fetch is one more):
        // B, offered again at each, is still not applied.
        const from = w.server.requests.length;
        const looks = () =>
          w.server.requests
            .slice(from)
            .filter((r: ServedRequest) => r.method === 'POST' && r.path.endsWith('/git-upload-pack')).length;
        await until(() => looks() >= 3 || undefined, 20_000, 'three more looks at the branch');

        expect(
          appliesOf(w.h, b).map((e) => e.outcome),
          `B's applies; history: ${outcomes(w.h).join(', ')}; the restarted agent said "${seen.msg}"`,
        ).toEqual(['failure']);
        expect(
          second.lines((l) => l.msg === 'reconcile plan' && l.revision === b).map((l) => l.msg),
          'B reconciled after the restart',
        ).toEqual([]);
        expect(seen.msg).toMatch(new RegExp(`^${FAILED_BEFORE}`));
        // The device runs A, the same instance.
        await until(() => w.h.component('a')?.state === 'running' || undefined, 15_000, 'a running');
        expect(w.h.appliedRevision()?.id).toBe(a);
        expect(w.h.component('a')?.version).toBe('1.0.0');
        expect(w.h.pidsOf().a).toBe(pidA);
        // B's report is unchanged: nothing but its failure was enqueued for it since, its note still says failure.
        expect(
          outboxOf(w.h, b)
            .slice(before)
            .map((r) => r.state)
            .filter((s) => s !== 'failure'),
          'statuses of B enqueued after the restart',
        ).toEqual([]);
        expect((await w.note(b))?.state).toBe('failure');
        expect(await w.noted(b)).not.toContain('success');
        expect((await w.note(a))?.state).toBe('success');
      });
    });
  }

  it('a commit refused after a restart (an unsigned edit pushed while the agent was down): refused as error, the device keeps what it ran, the earlier failure stands', async () => {
    await withGitWorld([failing('never')], async (w) => {
      const f = await w.push('a component that never gets healthy');
      const first = w.start();
      await w.noteSays(f, 'failure');
      await outboxDelivered(w.h, f);
      const pid = w.h.pidsOf().never;
      await first.kill9();

      // While the agent is down: an edit without a new signature (SHA256SUMS no longer matches).
      w.fx.bumpVersion('never', '1.0.1');
      const refused = await w.push('an unsigned edit', { sign: false });

      const second = w.start();
      await w.noteSays(refused, 'error');
      expect(w.h.history().find((e) => e.revision === refused)).toMatchObject({
        outcome: 'rejected',
        summary: expect.stringMatching(/^KS_DIGEST_MISMATCH/),
      });
      // Nothing valid came: the agent goes on with what it ran (it resumes it; today's code applies it again).
      const settled = await resumedOrApplied(second, `the restarted agent to go on with ${f.slice(0, 12)}`, 0);
      const rows = await outboxDelivered(w.h, f);

      expect(
        rows.map((r) => r.state),
        `statuses enqueued for the earlier commit; the restarted agent said "${settled.msg}"`,
      ).toEqual(['pending', 'failure']);
      expect(
        appliesOf(w.h, f).map((e) => e.outcome),
        `history: ${outcomes(w.h).join(', ')}`,
      ).toEqual(['failure']);
      expect((await w.note(f))?.state).toBe('failure');
      expect(await w.noted(f)).not.toContain('success');
      expect(w.h.appliedRevision()?.id).toBe(f);
      expect(w.h.component('never')).toMatchObject({ state: 'unhealthy', version: '1.0.0' });
      expect(w.h.pidsOf().never).toBe(pid);
    });
  });

  for (const { how, down } of RESTARTS) {
    it(`the outbox replays after ${how} and a restart: the failure undelivered while the server refused pushes arrives as failure, and nothing says success`, async () => {
      await withGitWorld([failing('never')], async (w) => {
        // Every push to the server is refused (a 503) until the test clears this; fetches are served.
        const isPush = (r: ServedRequest) =>
          r.path.endsWith('/git-receive-pack') || r.query.includes('service=git-receive-pack');
        w.server.cannedAnswers.push(...Array.from({ length: 1000 }, () => ({ status: 503, when: isPush })));
        const c = await w.push('a component that never gets healthy');
        const first = w.start();
        await first.waitForLog(is.msgIncludes('apply failed'), 30_000, 0, 'the failed apply');
        await until(
          () => outboxOf(w.h, c).some((r) => r.state === 'failure' && r.nextAttemptAt !== null) || undefined,
          10_000,
          'the failure waiting in the outbox',
        );
        await until(
          () => w.server.requests.some((r) => isPush(r) && r.status === 503) || undefined,
          15_000,
          'a refused push of a status',
        );
        expect(await w.note(c), 'nothing delivered yet').toBeUndefined();

        await down(first);
        w.server.cannedAnswers.splice(0);
        const second = w.start();
        const settled = await resumedOrApplied(second, `the restarted agent to resume ${c.slice(0, 12)}`);
        const rows = await outboxDelivered(w.h, c, 45_000);

        expect(
          rows.map((r) => r.state),
          `statuses enqueued for the commit; the restarted agent said "${settled.msg}"`,
        ).toEqual(['pending', 'failure']);
        expect((await w.note(c))?.state).toBe('failure');
        expect(await w.noted(c), 'every status the server received for the commit').toEqual(['pending', 'failure']);
        expect(
          appliesOf(w.h, c).map((e) => e.outcome),
          `history: ${outcomes(w.h, c).join(', ')}`,
        ).toEqual(['failure']);
      });
    });
  }
});
