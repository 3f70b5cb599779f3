// The Git cache is the agent's user's alone (issue 28, finding 9). `<state-dir>/git/…` was 0755/0644 below a 0711
// state directory at a guessable path: a component's run user (`nobody`) could read every plan's configuration
// values there, other components' too, round the API token of SPEC §10. Here a real agent follows a real Git server
// and `nobody` tries to read its caches: the pack, and a recipe's configuration through `git show`. It cannot. A cache
// an older agent left open (0755/0644, which `nobody` can read: shown first) is made private at the next start. The
// notes cache (`notes.git`, written by the reporter) is closed as a whole: its directory is 0700 from the start.
import { execFileSync, spawnSync } from 'node:child_process';
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { is } from '../support/agent-harness.js';
import { until } from '../support/composite-fixture.js';
import { withGitWorld } from '../support/git-world.js';
import { needs } from '../support/requirements.js';
import { sleeper } from '../support/stack-fixture.js';

/** Running a command as another user takes root. */
const root = needs('root');
const SECRET = 'configuration-value-only-the-agent-may-read';

/** `cmd` run as nobody:nogroup with no supplementary groups: its exit code and output. */
function asNobody(cmd: string[]): { code: number; out: string } {
  const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...cmd], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: '/tmp' },
  });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

/** Every path under `dir` (itself included) whose group or other bits are set. */
function openToOthers(dir: string): string[] {
  const open: string[] = [];
  const walk = (p: string) => {
    const st = lstatSync(p);
    if (st.mode & 0o077) open.push(`${p} ${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
  };
  walk(dir);
  return open;
}

/** The newest generation of the followed repository's cache, and a pack in it. */
function cacheOf(stateDir: string): { gitdir: string; pack: string } {
  const base = join(stateDir, 'git');
  const key = readdirSync(base)[0]!;
  const gen = readdirSync(join(base, key))
    .filter((g) => /^gen-\d+$/.test(g))
    .sort()
    .at(-1)!;
  const gitdir = join(base, key, gen);
  const pack = readdirSync(join(gitdir, 'objects', 'pack')).find((f) => f.endsWith('.pack'))!;
  return { gitdir, pack: join(gitdir, 'objects', 'pack', pack) };
}

describe('the Git cache under the state directory', { timeout: 120_000 }, () => {
  it.skipIf(root.skip)(
    root.title(
      "is the agent's user's alone: nobody reads a plan's configuration there, and an older agent's open cache is closed at start",
    ),
    async () => {
      await withGitWorld([{ ...sleeper('a'), config: { token: SECRET } }], async (w) => {
        const first = await w.push('first');
        let agent = w.start();
        await until(() => w.h.appliedRevision()?.id === first || undefined, 60_000, 'the first commit applied');
        await w.noteSays(first, 'success');
        const { gitdir, pack } = cacheOf(w.h.stateDir);
        const show = ['git', '-c', 'safe.directory=*', '--git-dir', gitdir, 'show', `${first}:recipes/a.toml`];
        // As root the cache holds the value (what nobody must not read).
        expect(execFileSync(show[0]!, show.slice(1), { encoding: 'utf8' })).toContain(SECRET);

        expect(openToOthers(join(w.h.stateDir, 'git'))).toEqual([]);
        expect(lstatSync(join(w.h.stateDir, 'notes.git')).mode & 0o777).toBe(0o700);
        expect(asNobody(['ls', join(w.h.stateDir, 'notes.git')]).code).not.toBe(0);
        // The way there is open (the state directory is 0711): what stops nobody is the cache's own modes.
        expect(asNobody(['stat', join(w.h.stateDir, 'git')]).code).toBe(0);
        expect(asNobody(['cat', pack]).code).not.toBe(0);
        const refused = asNobody(show);
        expect(refused.code).not.toBe(0);
        expect(refused.out).not.toContain(SECRET);

        // As an older agent left it: directories 0755, files 0644. Then nobody reads the configuration.
        await agent.stop();
        execFileSync('chmod', ['-R', 'go+rX', join(w.h.stateDir, 'git'), join(w.h.stateDir, 'notes.git')]);
        expect(asNobody(show)).toMatchObject({ code: 0, out: expect.stringContaining(SECRET) });

        // The next start closes it before it looks at anything.
        agent = w.start();
        await agent.waitForLog(is.msg('agent started'), 30_000);
        for (const dir of ['git', 'notes.git']) expect(openToOthers(join(w.h.stateDir, dir))).toEqual([]);
        expect(asNobody(['cat', pack]).code).not.toBe(0);
        expect(asNobody(show).code).not.toBe(0);
        // And what it writes from then on is private as it is written.
        w.fx.bumpVersion('a', '2.0.0');
        const second = await w.push('second');
        await until(() => w.h.appliedRevision()?.id === second || undefined, 60_000, 'the second commit applied');
        await w.noteSays(second, 'success');
        expect(openToOthers(join(w.h.stateDir, 'git'))).toEqual([]);
        expect(lstatSync(join(w.h.stateDir, 'notes.git')).mode & 0o777).toBe(0o700);
        expect(asNobody(show).code).not.toBe(0);
      });
    },
  );
});
