// Review repro F5: outcomes.finish() throwing (the store cannot write: a full disk) is outside take-revision.ts's
// try/catch, so the ticket is never abandoned: the row stays open with nobody to close it, no report is made, the
// retry finds the commit 'current' (nothing to do), and with --on-failure rollback the listener already offered the
// rollback. After a restart, the open row makes the failed commit `continue`: it is applied again.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../../src/agent/agent.js';
import { rollBackOnFailure } from '../../../src/agent/rollback-on-failure.js';
import { createLogger } from '../../../src/log/logger.js';
import { ProcessRuntime } from '../../../src/runtime/process-runtime.js';
import { DirectoryReader } from '../../../src/source/directory-reader.js';
import { ApplyHistory as SqliteStateStore } from '../../../src/store/apply-history.js';

const G = 'a'.repeat(40);
const X = 'b'.repeat(40);

function repo(bad: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), 'review-f5-repo-'));
  mkdirSync(join(dir, 'recipes'));
  mkdirSync(join(dir, 'plans'));
  writeFileSync(
    join(dir, 'recipes', 'svc.toml'),
    `[metadata]\nname = "com.test.svc"\nversion = "${bad ? '2.0.0' : '1.0.0'}"\n\n[lifecycle.run.exec]\ncommand = "sleep"\nargs = ["1000"]\n\n[lifecycle.run.health]\ncheck = "tcp://127.0.0.1:1"\ninterval = "100ms"\ntimeout = "50ms"\nfailure_threshold = 3\n`,
  );
  writeFileSync(join(dir, 'plans', 'p.toml'), `[[components]]\nname = "svc"\nrecipe = "recipes/svc.toml"\n`);
  return dir;
}

describe('review F5', { timeout: 60_000 }, () => {
  it('a finish that cannot be written leaves the row open; after a restart the failed commit is applied again', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'review-f5-state-'));
    const lines: Array<Record<string, unknown>> = [];
    const reports: string[] = [];
    const start = () =>
      startAgent({
        planFile: 'plans/p.toml',
        stateDir,
        trust: { unsigned: true },
        log: createLogger({ pretty: false, write: (l) => lines.push(JSON.parse(l)) }),
        runtimes: { process: new ProcessRuntime({ installArtifacts: async () => undefined }) },
        // version 2.0.0 (X) never gets healthy; 1.0.0 (G) does.
        probe: async (c) => ({ ok: c.recipe.metadata.version === '1.0.0', detail: '', latencyMs: 0 }),
        concurrency: 2,
        graceMs: 1000,
        retryMs: 200,
      });
    const rev = (id: string) => ({ id, source: 'test', reader: new DirectoryReader(repo(id === X)) });
    const capture = (a: Agent) =>
      a.outcomes.reportTo({ applying: (e) => void reports.push(`pending ${e.revision.slice(0, 1)}`), held: () => undefined, finished: (e) => void reports.push(`${e.outcome} ${e.revision.slice(0, 1)}`), refused: () => undefined });
    let a = await start();
    capture(a);
    rollBackOnFailure({ outcomes: a.outcomes, store: a.store, offer: (r) => a.offer(r), revisionAt: async (c) => (c === G ? rev(G) : undefined), log: createLogger({ pretty: false, write: () => undefined }) });
    a.offer(rev(G));
    await a.idle();
    // The disk fills just as X's failure is written.
    const real = SqliteStateStore.prototype.finish;
    let once = true;
    SqliteStateStore.prototype.finish = function (this: SqliteStateStore, ...args: Parameters<typeof real>) {
      if (once && args[1].outcome === 'failure') {
        once = false;
        throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      }
      return real.apply(this, args);
    };
    try {
      a.offer(rev(X));
      await a.idle();
      await new Promise((r) => setTimeout(r, 1500)); // the retry, and the rollback the listener offered
      await a.idle();
    } finally {
      SqliteStateStore.prototype.finish = real;
    }
    const show = () => a.store.history({ limit: 20 }).reverse().map((e) => `${e.id} ${e.revision.slice(0, 1)} ${e.outcome ?? 'OPEN'} ${e.summary ?? ''}`);
    console.log('history after the full disk:\n' + show().join('\n'));
    console.log('reports:', reports);
    console.log(lines.filter((l) => typeof l.msg === 'string' && /unexpectedly|nothing to do|rolling back|trying again/.test(l.msg as string)).map((l) => `${l.msg} ${String(l.revision ?? '').slice(0, 1)}`));
    await a.close();
    // Restart: what runs (G) is resumed, then the tip (X) is offered, as follow-git does.
    a = await start();
    capture(a);
    a.offer(rev(G));
    await a.idle();
    a.offer(rev(X));
    await a.idle();
    console.log('history after the restart:\n' + show().join('\n'));
    console.log('reports:', reports);
    const xApplies = a.store.history({ limit: 20 }).filter((e) => e.revision === X);
    await a.close({ stopComponents: true });
    rmSync(stateDir, { recursive: true, force: true });
    expect(xApplies.filter((e) => e.outcome !== undefined).length, 'X decided once').toBe(1);
    expect(lines.some((l) => l.msg === 'reconcile plan' && l.revision === X && lines.indexOf(l) > lines.findIndex((m) => m.msg === 'agent started' || m.msg === 'resumed the revision applied last: its outcome stands (success)')), 'X not applied again after the restart').toBe(false);
  });
});
