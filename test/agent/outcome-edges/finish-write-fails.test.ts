// A failure that could not be written is no outcome yet, and is tried again (SPEC §5; outcomes.ts finish(), rules 1
// and 4). Issue 27's review found that when the store could not write a failed apply's row (a full disk), nothing
// ever closed that row: no report was made, the retry found the commit already carried out (nothing to do),
// `--on-failure rollback` had been set off before anything was written, and after a restart the open row had the
// failed commit applied again. Now the row stays open, the loop takes the revision up again (the retry may apply it
// again) and writes the failure then, and what a failure listener does (the rollback) happens only once it is
// written. Pinned here: the failed commit X is decided exactly once (one finished row, one failure report, no row
// left open), the device rolls back to the good commit G, and after a restart X is not applied again: the restarted
// agent says it failed on this device before.
//
// In process: the real agent (agent.ts startAgent) with a real ProcessRuntime, health probes stubbed (version 1.0.0,
// G, is healthy; 2.0.0, X, never is), and the store's first write of a failure made to throw SQLITE_FULL.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../../src/agent/agent.js';
import { rollBackOnFailure } from '../../../src/agent/rollback-on-failure.js';
import { createLogger } from '../../../src/log/logger.js';
import { ProcessRuntime } from '../../../src/runtime/process-runtime.js';
import { DirectoryReader } from '../../../src/source/directory-reader.js';
import { ApplyHistory } from '../../../src/store/apply-history.js';
import { until } from '../../support/composite-fixture.js';

const G = 'a'.repeat(40);
const X = 'b'.repeat(40);

/** A repository of one component `svc`: version 2.0.0 for X, 1.0.0 for G. */
function repo(dir: string, id: string): string {
  mkdirSync(join(dir, 'recipes'), { recursive: true });
  mkdirSync(join(dir, 'plans'), { recursive: true });
  writeFileSync(
    join(dir, 'recipes', 'svc.toml'),
    `[metadata]\nname = "com.test.svc"\nversion = "${id === X ? '2.0.0' : '1.0.0'}"\n\n[lifecycle.run.exec]\ncommand = "sleep"\nargs = ["1000"]\n\n[lifecycle.run.health]\ncheck = "tcp://127.0.0.1:1"\ninterval = "100ms"\ntimeout = "50ms"\nfailure_threshold = 3\n`,
  );
  writeFileSync(join(dir, 'plans', 'p.toml'), `[[components]]\nname = "svc"\nrecipe = "recipes/svc.toml"\n`);
  return dir;
}

describe('a failure the store cannot write (a full disk)', { timeout: 60_000 }, () => {
  it('is retried: the failed commit is decided once, rolled back from, and not applied again after a restart', async () => {
    const root = mkdtempSync(join(tmpdir(), 'keystone-finish-write-'));
    const stateDir = join(root, 'state');
    const lines: Array<Record<string, unknown>> = [];
    const reports: string[] = [];
    const rev = (id: string) => ({
      id,
      origin: 'commit' as const,
      source: 'test',
      reader: new DirectoryReader(repo(join(root, id.slice(0, 1)), id)),
    });
    const start = async () => {
      const a = await startAgent({
        planFile: 'plans/p.toml',
        stateDir,
        trust: { unsigned: true },
        log: createLogger({ pretty: false, write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) }),
        runtimes: { process: new ProcessRuntime({ installArtifacts: async () => undefined }) },
        probe: async (c) => ({ ok: c.recipe.metadata.version === '1.0.0', detail: '', latencyMs: 0 }),
        concurrency: 2,
        graceMs: 1000,
        retryMs: 200,
      });
      const short = (id: string) => (id === G ? 'G' : id === X ? 'X' : id);
      a.outcomes.reportTo({
        applying: (e) => void reports.push(`pending ${short(e.revision)}`),
        held: () => undefined,
        waiting: () => undefined,
        finished: (e) => void reports.push(`${e.outcome} ${short(e.revision)}`),
        refused: () => undefined,
      });
      rollBackOnFailure({
        outcomes: a.outcomes,
        store: a.store,
        offer: (r) => a.offer(r),
        revisionAt: async (c) => (c === G ? rev(G) : undefined),
        log: createLogger({ pretty: false, write: () => undefined }),
      });
      return a;
    };
    const decided = (a: Agent, id: string) =>
      a.store.history({ limit: 50 }).filter((e) => e.revision === id && e.outcome !== undefined);
    let a: Agent | undefined = await start();
    try {
      a.offer(rev(G));
      await a.idle();

      // The disk is full when X's failure is first written.
      const write = ApplyHistory.prototype.finish;
      let full = true;
      ApplyHistory.prototype.finish = function (this: ApplyHistory, ...args: Parameters<typeof write>) {
        if (full && args[1].outcome === 'failure') {
          full = false;
          throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
        }
        return write.apply(this, args);
      };
      try {
        a.offer(rev(X));
        // The retry writes X's failure; the rollback to G comes after it.
        const agent = a;
        await until(
          () =>
            decided(agent, X).length > 0 && agent.store.appliedRevision()?.id === G && decided(agent, G).length === 2,
          20_000,
          "X's failure written and the rollback to G applied",
        );
        await a.idle();
      } finally {
        ApplyHistory.prototype.finish = write;
      }
      expect(full, 'the first write of the failure failed').toBe(false);
      expect(decided(a, X)).toMatchObject([
        { outcome: 'failure', summary: expect.stringContaining('rolling back to') },
      ]);
      expect(a.store.unfinishedApply(), 'no row left open').toBeUndefined();
      // The rollback is the agent's own: no report of its own.
      expect(reports).toEqual(['pending G', 'success G', 'pending X', 'failure X']);
      await a.close();
      a = undefined;

      // Restart: what runs (G) is resumed, then the tip (X) is offered again, as following Git does.
      const restarted = lines.length;
      a = await start();
      a.offer(rev(G));
      await a.idle();
      a.offer(rev(X));
      await a.idle();
      const after = lines.slice(restarted);
      expect(
        after.filter((l) => l.msg === 'reconcile plan' && l.revision === X),
        'X applied after the restart',
      ).toEqual([]);
      expect(
        after.filter(
          (l) => typeof l.msg === 'string' && l.msg.startsWith('failed on this device before') && l.revision === X,
        ),
      ).toHaveLength(1);
      expect(decided(a, X).map((e) => e.outcome)).toEqual(['failure']);
      expect(a.store.appliedRevision()?.id).toBe(G);
      expect(reports).toEqual(['pending G', 'success G', 'pending X', 'failure X']);
    } finally {
      await a?.close({ stopComponents: true });
      rmSync(root, { recursive: true, force: true });
    }
  });
});
