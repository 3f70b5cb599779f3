// Issue 28, finding 6: the files the agent trusts without making them (configuration, trusted keys, secrets), judged as
// sshd's StrictModes judges its own: the file and every directory and link on the way, owned by root or the agent's
// user and writable by no group and no other user; a secret readable by no one else. Links are followed and each hop
// is checked. "Another user" is nobody (65534): planting one's file takes chown, which only root may do.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { trustedFileProblem, type TrustedFileRole } from '../../src/runtime/trusted-file.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';

const NOBODY = 65534;
const root = needs('root');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A directory of the agent's user, 0755, in /tmp (sticky, everyone's: accepted on the way). */
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'keystone-trusted-'));
  chmodSync(d, 0o755);
  dirs.push(d);
  return d;
}

function file(path: string, mode = 0o644): string {
  writeFileSync(path, 'x\n');
  chmodSync(path, mode);
  return path;
}

const judge = (path: string, role: TrustedFileRole = 'config') => trustedFileProblem({ path, role });

describe('a file the agent trusts', () => {
  it('passes a file of the agent’s user, 0644 (0600 for a secret), in directories only it or root can change, /tmp (sticky) on the way', () => {
    const d = temp();
    expect(judge(file(join(d, 'agent.toml'), 0o640))).toBeUndefined();
    expect(judge(file(join(d, 'release.pub')), 'trusted-key')).toBeUndefined();
    expect(judge(file(join(d, 'token'), 0o600), 'secret')).toBeUndefined();
    // Not there, or not a file: the reader says so with its own code.
    expect(judge(join(d, 'missing.toml'))).toBeUndefined();
    expect(judge(d)).toBeUndefined();
  });

  it('refuses a file a group or every user may write, naming it and the chmod', () => {
    const d = temp();
    for (const [mode, text] of [
      [0o664, '0664'],
      [0o666, '0666'],
      [0o620, '0620'],
    ] as const) {
      const f = file(join(d, `agent-${text}.toml`), mode);
      expect(judge(f)).toMatchObject({
        at: f,
        code: 'KS_CONFIG_UNSAFE',
        problem: `${f} is writable by other users (mode ${text})`,
        fix: `chmod go-w ${f}`,
      });
    }
    const key = file(join(d, 'release.pub'), 0o666);
    expect(judge(key, 'trusted-key')).toMatchObject({ code: 'KS_TRUSTED_KEY_UNSAFE', fix: `chmod go-w ${key}` });
  });

  it('refuses a file in a directory a group or every user may write (not sticky), naming the directory', () => {
    const d = temp();
    const open = join(d, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const f = file(join(open, 'agent.toml'));
    expect(judge(f)).toMatchObject({
      at: open,
      problem: `${open}, a directory on the way to ${f}, is writable by other users (mode 0777), who could put another file in its place`,
      fix: `chmod go-w ${open}`,
    });
    chmodSync(open, 0o775);
    expect(judge(f)).toMatchObject({ at: open, fix: `chmod go-w ${open}` });
    // Sticky and everyone's, like /tmp: what is not theirs in it stays out of their reach.
    chmodSync(open, 0o1777);
    expect(judge(f)).toBeUndefined();
  });

  it('follows links: a link to a file in a writable directory is refused there; a link to a safe file passes', () => {
    const d = temp();
    const open = join(d, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const target = file(join(open, 'agent.toml'));
    const etc = join(d, 'etc');
    mkdirSync(etc);
    symlinkSync(target, join(etc, 'agent.toml'));
    expect(judge(join(etc, 'agent.toml'))).toMatchObject({ at: open, fix: `chmod go-w ${open}` });
    // Relative, through `..`, and a link to a directory on the way.
    symlinkSync('../open/agent.toml', join(etc, 'relative.toml'));
    expect(judge(join(etc, 'relative.toml'))).toMatchObject({ at: open });
    symlinkSync('../open', join(etc, 'open-dir'));
    expect(judge(join(etc, 'open-dir', 'agent.toml'))).toMatchObject({ at: open });
    // The same file in a safe directory, reached by a link: it is the file that counts.
    chmodSync(open, 0o755);
    expect(judge(join(etc, 'agent.toml'))).toBeUndefined();
    expect(judge(join(etc, 'open-dir', 'agent.toml'))).toBeUndefined();
    // A loop is not judged here (reading it fails, ELOOP).
    symlinkSync('loop-b', join(etc, 'loop-a'));
    symlinkSync('loop-a', join(etc, 'loop-b'));
    expect(judge(join(etc, 'loop-a'))).toBeUndefined();
  });

  it('refuses a secret its group or every user may read, with the chmod', () => {
    const d = temp();
    for (const mode of [0o644, 0o640, 0o604]) {
      const f = file(join(d, `token-${mode.toString(8)}`), mode);
      expect(judge(f, 'secret')).toMatchObject({
        code: 'KS_SECRET_FILE_UNSAFE',
        problem: `${f} is readable by other users (mode 0${mode.toString(8)}), and so is the secret in it`,
        fix: `chmod 600 ${f}`,
      });
    }
  });

  describe.skipIf(root.skip)(root.title('another user’s files'), () => {
    it('refuses a file, a directory on the way or a link of another user, with the chown', () => {
      const d = temp();
      const f = file(join(d, 'agent.toml'));
      chownSync(f, NOBODY, NOBODY);
      expect(judge(f)).toMatchObject({
        at: f,
        problem: `${f} is owned by uid ${NOBODY} (nobody), who could change it`,
        fix: `chown root: ${f}`,
      });

      // A directory of theirs, even 0755: they can replace what is in it.
      const theirs = join(d, 'theirs');
      mkdirSync(theirs);
      chownSync(theirs, NOBODY, NOBODY);
      const inside = file(join(theirs, 'agent.toml'));
      expect(judge(inside)).toMatchObject({
        at: theirs,
        problem: expect.stringContaining(
          `${theirs}, a directory on the way to ${inside}, is owned by uid ${NOBODY} (nobody)`,
        ),
        fix: expect.stringMatching(new RegExp(`^chown root: ${theirs}`)),
      });

      // A safe link into their directory, and a link of theirs in a sticky directory pointing at a safe file.
      const etc = join(d, 'etc');
      mkdirSync(etc);
      symlinkSync(inside, join(etc, 'agent.toml'));
      expect(judge(join(etc, 'agent.toml'))).toMatchObject({ at: theirs });
      const safe = file(join(etc, 'real.toml'));
      const sticky = join(d, 'sticky');
      mkdirSync(sticky);
      chmodSync(sticky, 0o1777);
      symlinkSync(safe, join(sticky, 'agent.toml'));
      lchownSync(join(sticky, 'agent.toml'), NOBODY, NOBODY);
      expect(judge(join(sticky, 'agent.toml'))).toMatchObject({
        at: join(sticky, 'agent.toml'),
        fix: `chown -h root: ${join(sticky, 'agent.toml')}, or give the real path`,
      });
      // A chain: a safe link to a link that lives in their directory.
      symlinkSync(safe, join(theirs, 'hop'));
      symlinkSync(join(theirs, 'hop'), join(etc, 'chain.toml'));
      expect(judge(join(etc, 'chain.toml'))).toMatchObject({ at: theirs });
    });

    it('an agent run as its own user (nobody, through setpriv): its own files pass; a secret of root it reads is to be made its own', () => {
      const d = temp();
      chownSync(d, NOBODY, NOBODY);
      const config = file(join(d, 'agent.toml'), 0o640);
      const token = file(join(d, 'token'), 0o600);
      chownSync(config, NOBODY, NOBODY);
      chownSync(token, NOBODY, NOBODY);
      const rootsSecret = file(join(d, 'root-token'), 0o644);
      const rootsConfig = file(join(d, 'root.toml'), 0o644);
      const theirs = file(join(d, 'theirs.toml'), 0o644);
      chownSync(theirs, 1, 1);
      // The real module (dist/), judged by a process whose user is nobody: the rule reads the process's own uid. A copy
      // nobody can reach: the checkout may sit below a directory only root may enter (CI clones into a mktemp -d).
      const built = temp();
      for (const room of ['runtime', 'core', 'state-dir'])
        cpSync(join(PROJECT_ROOT, 'dist', room), join(built, room), { recursive: true });
      const script = `import('${join(built, 'runtime', 'trusted-file.js')}').then((m) => console.log(JSON.stringify(${JSON.stringify(
        [
          [config, 'config'],
          [token, 'secret'],
          [rootsConfig, 'config'],
          [rootsSecret, 'secret'],
          [theirs, 'config'],
        ],
      )}.map(([path, role]) => m.trustedFileProblem({ path, role })?.fix ?? null))))`;
      const r = spawnSync(
        'setpriv',
        [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, '-e', script],
        { encoding: 'utf8' },
      );
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual([
        null,
        null,
        null,
        `chown nobody: ${rootsSecret} && chmod 600 ${rootsSecret}`,
        `chown nobody: ${theirs}`,
      ]);
    });
  });
});
