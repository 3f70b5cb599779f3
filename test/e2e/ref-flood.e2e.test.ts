// A flood of refs on the server (issue 28, finding 11): anyone who can push can add refs whose names share the
// prefix a device asks for. ~80,000 branches named `main-…` (about 9 MB of listing) used to stop every look at the
// followed branch (KS_GIT_FETCH_TOO_LARGE at every poll, past a look's 8 MiB), so the next signed commit was never
// applied; 80,000 junk failure refs under a wave stopped every rollout gate reading that wave the same way. Here,
// with real agents and a real `git http-backend`, the refs are written straight into the bare repository's
// packed-refs (pushing 80,000 refs would take minutes), and each device still sees, takes and applies the next
// commit: the look reads only as far as the branch, and the gate asks only for the subtrees it needs.
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, type AgentProcess } from '../support/agent-harness.js';
import { until } from '../support/composite-fixture.js';
import { git, withGitWorld } from '../support/git-world.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const FLOOD = 80_000;

/**
 * Adds `names` to the bare repository's packed-refs, pointing at `oid` (an object it has: refs to missing objects
 * are skipped by Git), merged with what is there and sorted, as `git pack-refs` writes it.
 */
function floodRefs(bare: string, names: string[], oid: string): void {
  const file = join(bare, 'packed-refs');
  let existing: string[] = [];
  try {
    existing = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => /^[0-9a-f]{40} /.test(l));
  } catch {
    /* none packed yet */
  }
  const lines = [...existing, ...names.map((n) => `${oid} ${n}`)];
  const byName = (l: string) => Buffer.from(l.slice(41));
  lines.sort((a, b) => Buffer.compare(byName(a), byName(b)));
  writeFileSync(file, `# pack-refs with: peeled fully-peeled sorted \n${lines.join('\n')}\n`);
}

/** How many bytes an ls-refs listing of `names` takes: the 8 MiB a look used to give up at must be passed. */
const listingBytes = (names: string[]) => names.reduce((n, r) => n + 4 + 41 + r.length + 1, 0);

describe('a flood of refs on the Git server', { timeout: 240_000 }, () => {
  it('80,000 branches named main-…: the device still sees, applies and reports the next commit', async () => {
    await withGitWorld([sleeper('a')], async (w) => {
      const first = await w.push('first');
      const agent = w.start();
      await until(() => w.h.appliedRevision()?.id === first || undefined, 60_000, 'the first commit applied');
      const names = Array.from(
        { length: FLOOD },
        (_, i) => `refs/heads/main-${'x'.repeat(40)}-${String(i).padStart(6, '0')}`,
      );
      expect(listingBytes(names)).toBeGreaterThan(8 * 1024 * 1024);
      floodRefs(w.bare, names, first);
      w.fx.bumpVersion('a', '2.0.0');
      const second = await w.push('second, pushed after the flood');
      const mark = agent.mark();
      await until(
        () => w.h.appliedRevision()?.id === second || undefined,
        60_000,
        `the commit after the flood applied (log: ${agent.tail(8)})`,
      );
      await w.noteSays(second, 'success');
      expect(agent.lines((l) => l.code === 'KS_GIT_FETCH_TOO_LARGE', mark)).toEqual([]);
    });
  });

  describe('80,000 junk failure refs under the canary wave', () => {
    let root: string;
    let server: GitHttpServer;
    let bare: string;
    let fx: StackFixture;
    const harness: AgentHarness[] = [];
    const FLEET = `[[targets]]
name = "all"
selector = {}
plan = "plans/stack.toml"

[rollout]
waves = [
  { name = "canary", devices = ["d1"] },
  { name = "rest", percent = 100 },
]
bake = "1s"
min_success = 1
abort_failure_percent = 0
`;

    beforeAll(async () => {
      root = mkdtempSync(join(tmpdir(), 'keystone-ref-flood-'));
      server = await startGitHttpServer({ root: join(root, 'srv') });
      bare = server.createRepository('fleet', 'main');
      fx = await stackFixture({ signed: true, components: () => [sleeper('a')] });
      await git(fx.dir, 'init', '--quiet', '--initial-branch=main');
    });

    afterAll(async () => {
      for (const h of harness) await h.cleanup();
      await server?.stop();
      fx?.cleanup();
      rmSync(root, { recursive: true, force: true });
    });

    const start = (device: string): { h: AgentHarness; agent: AgentProcess } => {
      const h = new AgentHarness();
      harness.push(h);
      const agent = h.start({
        repo: server.url('fleet'),
        plan: undefined,
        trustArgs: fx.trustArgs,
        args: ['--ref', 'main', '--poll', '1s', '--device', device, '--status', 'git-notes'],
      });
      return { h, agent };
    };

    it('the second wave still reads the canary and applies the commit after its bake', async () => {
      fx.write();
      writeFileSync(join(fx.dir, 'fleet.toml'), FLEET);
      await fx.sign();
      await git(fx.dir, 'add', '-A');
      await git(fx.dir, 'commit', '--quiet', '-m', 'first release');
      await git(fx.dir, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
      const commit = await git(fx.dir, 'rev-parse', 'HEAD');
      // Failures of a commit nobody holds, by names no device writes: listed by a read of the whole wave.
      const junkCommit = 'f'.repeat(40);
      const names = Array.from(
        { length: FLOOD },
        (_, i) => `refs/keystone-rollout/canary/failed/${junkCommit}/junk-${String(i).padStart(6, '0')}-error`,
      );
      expect(listingBytes(names)).toBeGreaterThan(8 * 1024 * 1024);
      floodRefs(bare, names, commit);

      const d1 = start('d1');
      const d2 = start('d2');
      await until(
        () => d1.h.appliedRevision()?.id === commit || undefined,
        60_000,
        `the canary to apply (log: ${d1.agent.tail(8)})`,
      );
      // d2 holds until it reads the canary's success (a read of the whole canary wave, which the flood sat under).
      await until(
        () => d2.h.appliedRevision()?.id === commit || undefined,
        90_000,
        `the second wave to apply after the canary (log: ${d2.agent.tail(8)})`,
      );
      expect(d2.agent.lines((l) => l.msg === 'rollout gate open' && l.revision === commit).length).toBeGreaterThan(0);
      expect(
        d2.agent.lines((l) => typeof l.msg === 'string' && l.msg.startsWith("cannot read the fleet's rollout reports")),
      ).toEqual([]);
    });
  });
});
