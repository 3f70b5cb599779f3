import { existsSync } from 'node:fs';
import { lstat, mkdir, readFile, readlink, stat, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { defaultRunUser } from '../../src/runtime/privileges.js';
import { findUser, readUserDb } from '../../src/state-dir/user-db.js';
import { readProcStat } from '../../src/runtime/proc-identity.js';
import { isRuntimeError } from '../../src/runtime/runtime-error.js';
import type { Instance } from '../../src/runtime/runtime.js';
import { needs } from '../support/requirements.js';
import { GroupReaper, liveGroup, procStatus, processComponent, readOr, tempRoot, waitFor } from './runtime-fixtures.js';

const reaper = new GroupReaper();
const python3 = needs('python3');
/** setpriv can change uid and capabilities only as root. */
const root = needs('root');
let tmp: Awaited<ReturnType<typeof tempRoot>>;
const noArtifacts = async () => {};
const runtime = new ProcessRuntime({ installArtifacts: noArtifacts });
const never = new AbortController().signal;

beforeEach(async () => {
  tmp = await tempRoot();
});
afterEach(async () => {
  await reaper.killAll();
  await tmp.cleanup();
});

const track = (i: Instance): Instance & { ref: { kind: 'process'; pid: number; startTime: string } } => {
  if (i.ref.kind !== 'process') throw new Error('not a process');
  reaper.add(i.ref.pid);
  return i as Instance & { ref: { kind: 'process'; pid: number; startTime: string } };
};

async function expectCode(p: Promise<unknown>, code: Parameters<typeof isRuntimeError>[1]): Promise<Error> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isRuntimeError(err, code), `expected ${code}, got ${String(err)}`).toBe(true);
  return err as Error;
}

describe.skipIf(root.skip)(root.title('privileges'), () => {
  it('a component run as nobody has that uid, NoNewPrivs and no capabilities at all', async () => {
    const c = processComponent('nobody', { command: 'sleep', args: ['1000'] }, { security: { user: 'nobody' } });
    const i = track(await runtime.start(c, tmp.paths('nobody')));
    await waitFor(async () => (await procStatus(i.ref.pid, 'Name')) === 'sleep', 'setpriv to exec sleep');
    expect(await procStatus(i.ref.pid, 'Uid')).toBe('65534\t65534\t65534\t65534');
    expect(await procStatus(i.ref.pid, 'Gid')).toBe('65534\t65534\t65534\t65534');
    expect(await procStatus(i.ref.pid, 'NoNewPrivs')).toBe('1');
    for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'])
      expect(await procStatus(i.ref.pid, set), set).toBe('0000000000000000');
  });

  it('a component granted CAP_NET_BIND_SERVICE has exactly that bit and can bind port 80', async () => {
    const paths = tmp.paths('bind');
    await mkdir(paths.workDir, { recursive: true });
    await writeFile(
      join(paths.workDir, 'bind.mjs'),
      `import net from 'node:net';
const s = net.createServer();
s.on('error', (e) => { console.error('bind failed', e.code); process.exit(1); });
s.listen(80, '127.0.0.1', () => console.log('bound 80'));
`,
    );
    const c = processComponent(
      'bind',
      { command: 'node', args: ['bind.mjs'] },
      { security: { user: 'nobody', capabilities: ['CAP_NET_BIND_SERVICE'] } },
    );
    const i = track(await runtime.start(c, paths));
    const out = await waitFor(async () => {
      const o = await readOr(join(paths.logDir, 'stdout.log'));
      const e = await readOr(join(paths.logDir, 'stderr.log'));
      return o.includes('bound 80') || e.includes('bind failed') ? o + e : undefined;
    }, 'the bind to succeed or fail');
    expect(out).toContain('bound 80');
    expect(await procStatus(i.ref.pid, 'Uid')).toMatch(/^65534\t/);
    for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'])
      expect(await procStatus(i.ref.pid, set), set).toBe('0000000000000400');
    expect(await procStatus(i.ref.pid, 'NoNewPrivs')).toBe('1');
  });

  it('the run user owns the work directory and the artifacts, and the install script runs as the run user', async () => {
    const rt = new ProcessRuntime({
      installArtifacts: async (_c, dir) => {
        await mkdir(join(dir, 'bin'), { recursive: true });
        await writeFile(join(dir, 'bin', 'tool'), 'artifact');
      },
    });
    const c = processComponent(
      'owned',
      { command: 'sleep', args: ['1'] },
      { security: { user: 'nobody' }, install: { script: 'id -u > uid.txt && chmod +x bin/tool && mkdir -p data' } },
    );
    // A fake artifact list so the runtime calls the installer.
    c.recipe.artifacts.push({ uri: 'tool', sha256: '0'.repeat(64), unpack: false });
    const paths = tmp.paths('owned');
    await rt.install(c, paths, never);
    const st = await stat(paths.workDir);
    expect([st.uid, st.gid]).toEqual([65534, 65534]);
    expect((await readFile(join(paths.workDir, 'uid.txt'), 'utf8')).trim()).toBe('65534');
    for (const f of ['bin', 'bin/tool', 'data', 'uid.txt'])
      expect((await lstat(join(paths.workDir, f))).uid, f).toBe(65534);
    expect((await stat(join(paths.workDir, 'bin/tool'))).mode & 0o100).toBeTruthy();
  });

  it('an unknown run user is KS_USER_UNKNOWN before anything runs', async () => {
    const c = processComponent('ghost', { command: 'sleep', args: ['1'] }, { security: { user: 'no-such-user-ks' } });
    await expectCode(runtime.start(c, tmp.paths('ghost')), 'KS_USER_UNKNOWN');
    await expectCode(runtime.install(c, tmp.paths('ghost'), never), 'KS_USER_UNKNOWN');
  });
});

describe('install', () => {
  it('runs the script in the work directory and appends its output to the component logs', async () => {
    const c = processComponent(
      'inst',
      { command: 'true' },
      { install: { script: 'pwd; echo to-stderr >&2; touch made' } },
    );
    const paths = tmp.paths('inst');
    await runtime.install(c, paths, never);
    await runtime.install(c, paths, never);
    expect(await readOr(join(paths.logDir, 'stdout.log'))).toBe(`${paths.workDir}\n${paths.workDir}\n`);
    expect(await readOr(join(paths.logDir, 'stderr.log'))).toBe('to-stderr\nto-stderr\n');
    expect((await stat(join(paths.workDir, 'made'))).isFile()).toBe(true);
  });

  it('a failing script is KS_INSTALL_FAILED with its exit code and last stderr line', async () => {
    const c = processComponent('fail', { command: 'true' }, { install: { script: 'echo broken tarball >&2; exit 3' } });
    const err = await expectCode(runtime.install(c, tmp.paths('fail'), never), 'KS_INSTALL_FAILED');
    expect(err.message).toContain('exited with 3');
    expect(err.message).toContain('broken tarball');
  });

  it('a script that outlives its timeout is KS_INSTALL_TIMEOUT and its whole group is killed', async () => {
    const c = processComponent(
      'slow',
      { command: 'true' },
      { install: { script: 'echo $$ > pid; sleep 1000 & sleep 1000', timeout: '300ms' } },
    );
    const paths = tmp.paths('slow');
    const t0 = Date.now();
    await expectCode(runtime.install(c, paths, never), 'KS_INSTALL_TIMEOUT');
    expect(Date.now() - t0).toBeLessThan(3000);
    const pid = Number(await readOr(join(paths.workDir, 'pid')));
    expect(pid).toBeGreaterThan(0);
    reaper.add(pid);
    expect(liveGroup(pid)).toEqual([]);
  });

  it('leaves nothing running behind a script that backgrounds a process and exits 0', async () => {
    const c = processComponent('bg', { command: 'true' }, { install: { script: 'echo $$ > pid; sleep 1000 &' } });
    const paths = tmp.paths('bg');
    await runtime.install(c, paths, never);
    const pid = Number(await readOr(join(paths.workDir, 'pid')));
    reaper.add(pid);
    expect(liveGroup(pid)).toEqual([]);
  });

  it('an abort kills the script: KS_INSTALL_ABORTED', async () => {
    const ac = new AbortController();
    const c = processComponent('abort', { command: 'true' }, { install: { script: 'echo $$ > pid; sleep 1000' } });
    const paths = tmp.paths('abort');
    const p = runtime.install(c, paths, ac.signal);
    const pid = Number(await waitFor(() => readOr(join(paths.workDir, 'pid')), 'the script to start'));
    reaper.add(pid);
    ac.abort();
    await expectCode(p, 'KS_INSTALL_ABORTED');
    expect(liveGroup(pid)).toEqual([]);
  });
});

describe('start', () => {
  it('runs detached in its own session and group, with stdout/stderr as the log files (not pipes)', async () => {
    const c = processComponent('logs', { command: 'sh', args: ['-c', 'echo hello; echo oops >&2; exec sleep 1000'] });
    const paths = tmp.paths('logs');
    const i = track(await runtime.start(c, paths));
    const st = readProcStat(i.ref.pid)!;
    expect(st.pgrp).toBe(i.ref.pid);
    expect(st.session).toBe(i.ref.pid);
    expect(st.startTime).toBe(i.ref.startTime);
    await waitFor(async () => (await readOr(join(paths.logDir, 'stderr.log'))) === 'oops\n', 'stderr in the log');
    expect(await readOr(join(paths.logDir, 'stdout.log'))).toBe('hello\n');
    expect(await readlink(`/proc/${i.ref.pid}/fd/1`)).toBe(join(paths.logDir, 'stdout.log'));
    expect(await readlink(`/proc/${i.ref.pid}/fd/2`)).toBe(join(paths.logDir, 'stderr.log'));
    expect(await readlink(`/proc/${i.ref.pid}/fd/0`)).toBe('/dev/null');
  });

  it('gives the command a minimal environment plus the recipe env, and resolves ./relative commands in the work dir', async () => {
    const paths = tmp.paths('env');
    await mkdir(paths.workDir, { recursive: true, mode: 0o777 });
    await writeFile(join(paths.workDir, 'app.sh'), '#!/bin/sh\nenv | sort > env.txt\n', { mode: 0o755 });
    process.env.KS_TEST_LEAK = 'leaked';
    try {
      const c = processComponent('env', { command: './app.sh', env: { GREETING: 'hi there' } });
      const i = track(await runtime.start(c, paths));
      expect(await i.exited).toEqual({ code: 0, signal: null });
    } finally {
      delete process.env.KS_TEST_LEAK;
    }
    const env = Object.fromEntries(
      (await readFile(join(paths.workDir, 'env.txt'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => l.split(/=(.*)/s).slice(0, 2)),
    );
    expect(env.GREETING).toBe('hi there');
    expect(env.PATH).toBe('/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
    // The passwd home of the run user: as root, the device's default unprivileged user (the recipe names none).
    const db = await readUserDb();
    const home = process.getuid?.() === 0 ? findUser(db, defaultRunUser(db)!)!.home : userInfo().homedir;
    expect(env.HOME).toBe(home);
    expect(env.LANG).toBeDefined();
    expect(env.KS_TEST_LEAK).toBeUndefined();
    expect(
      Object.keys(env).filter((k) => !['GREETING', 'PATH', 'HOME', 'LANG', 'PWD', 'SHLVL', 'OLDPWD', '_'].includes(k)),
    ).toEqual([]);
  });

  it('a command that cannot be found is KS_START_FAILED at once', async () => {
    await expectCode(
      runtime.start(processComponent('missing', { command: 'no-such-command-ks' }), tmp.paths('missing')),
      'KS_START_FAILED',
    );
    await expectCode(
      runtime.start(processComponent('missing2', { command: './nope' }), tmp.paths('missing2')),
      'KS_START_FAILED',
    );
    const broken = new ProcessRuntime({ installArtifacts: noArtifacts, setprivPath: '/nonexistent/setpriv' });
    await expectCode(
      broken.start(processComponent('nosetpriv', { command: 'true' }), tmp.paths('nosetpriv')),
      'KS_START_FAILED',
    );
  });

  it('exited reports the exit code', async () => {
    const i = track(
      await runtime.start(processComponent('exit7', { command: 'sh', args: ['-c', 'exit 7'] }), tmp.paths('exit7')),
    );
    expect(await i.exited).toEqual({ code: 7, signal: null });
  });
});

describe('stop', () => {
  it('SIGTERM stops a well-behaved process at once', async () => {
    const i = track(
      await runtime.start(processComponent('term', { command: 'sleep', args: ['1000'] }), tmp.paths('term')),
    );
    const t0 = Date.now();
    await runtime.stop(i.ref, 5000);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(await i.exited).toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('SIGKILL after the grace period for a process that ignores SIGTERM', async () => {
    const paths = tmp.paths('stubborn');
    const c = processComponent('stubborn', {
      command: 'node',
      args: [
        '-e',
        "process.on('SIGTERM', () => console.log('ignored TERM')); console.log('ready'); setInterval(() => {}, 1000)",
      ],
    });
    const i = track(await runtime.start(c, paths));
    await waitFor(
      async () => (await readOr(join(paths.logDir, 'stdout.log'))).includes('ready'),
      'the handler to be installed',
    );
    const t0 = Date.now();
    await runtime.stop(i.ref, 400);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(380);
    expect(took).toBeLessThan(3000);
    expect(await i.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await readOr(join(paths.logDir, 'stdout.log'))).toContain('ignored TERM');
  });

  it('reaches a grandchild that ignores SIGTERM: everything is gone afterwards', async () => {
    const paths = tmp.paths('forks');
    const c = processComponent('forks', {
      command: 'sh',
      args: ['-c', '(trap "" TERM; exec sleep 1000) & echo $! > gc.pid; sleep 1000 & wait'],
    });
    const i = track(await runtime.start(c, paths));
    const gc = Number(await waitFor(() => readOr(join(paths.workDir, 'gc.pid')), 'the grandchild'));
    await waitFor(() => liveGroup(i.ref.pid).length === 3, 'three processes in the group');
    await runtime.stop(i.ref, 300);
    expect(liveGroup(i.ref.pid)).toEqual([]);
    const st = readProcStat(gc);
    expect(st === undefined || st.state === 'Z').toBe(true);
  });

  it.skipIf(python3.skip)(
    python3.title('also reaches a descendant that moved to its own process group in the session'),
    async () => {
      const paths = tmp.paths('moved');
      const c = processComponent('moved', {
        command: 'sh',
        args: [
          '-c',
          "python3 -c \"import os, time; os.setpgid(0, 0); open('moved.pid', 'w').write(str(os.getpid())); time.sleep(1000)\" & wait",
        ],
      });
      const i = track(await runtime.start(c, paths));
      const moved = Number(await waitFor(() => readOr(join(paths.workDir, 'moved.pid')), 'the descendant to move'));
      reaper.add(moved);
      expect(readProcStat(moved)).toMatchObject({ pgrp: moved, session: i.ref.pid });
      await runtime.stop(i.ref, 1000);
      expect(liveGroup(i.ref.pid)).toEqual([]);
      expect(liveGroup(moved)).toEqual([]);
    },
  );

  it('a stale ref (same pid, another start time) stops nothing', async () => {
    const i = track(
      await runtime.start(processComponent('stale', { command: 'sleep', args: ['1000'] }), tmp.paths('stale')),
    );
    await runtime.stop({ kind: 'process', pid: i.ref.pid, startTime: String(BigInt(i.ref.startTime) - 1n) }, 100);
    expect(liveGroup(i.ref.pid)).toEqual([i.ref.pid]);
  });
});

describe('adopt', () => {
  it('re-attaches to a running instance; exited resolves when it is killed from outside', async () => {
    const i = track(
      await runtime.start(processComponent('adopt', { command: 'sleep', args: ['1000'] }), tmp.paths('adopt')),
    );
    const adopted = await runtime.adopt(i.ref);
    expect(adopted?.ref).toEqual(i.ref);
    process.kill(-i.ref.pid, 'SIGKILL');
    const t0 = Date.now();
    expect(await adopted!.exited).toEqual({ code: null, signal: null });
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('never adopts a reused pid or a dead process', async () => {
    const i = track(
      await runtime.start(processComponent('reuse', { command: 'sleep', args: ['1000'] }), tmp.paths('reuse')),
    );
    expect(
      await runtime.adopt({ kind: 'process', pid: i.ref.pid, startTime: String(BigInt(i.ref.startTime) + 7n) }),
    ).toBeUndefined();
    await runtime.stop(i.ref, 1000);
    expect(await runtime.adopt(i.ref)).toBeUndefined();
    expect(await runtime.adopt({ kind: 'container', id: 'abc' })).toBeUndefined();
  });
});

describe('prepareStart (a restart prepared during its delay)', () => {
  it('the prepared process exists in its own group but runs the program only at go(): same pid, start time, environment and fds', async () => {
    const paths = tmp.paths('gated');
    const prepared = await runtime.prepareStart(processComponent('gated', { command: 'sleep', args: ['1000'] }), paths);
    const i = track(prepared.instance);
    const st = readProcStat(i.ref.pid)!;
    expect(st.pgrp).toBe(i.ref.pid);
    expect(st.session).toBe(i.ref.pid);
    expect(st.startTime).toBe(i.ref.startTime);
    // Waiting at the gate: the shell, not the program.
    await waitFor(async () => (await procStatus(i.ref.pid, 'Name')) === 'sh', 'the gate shell');
    expect(prepared.go()).toBe(prepared.instance);
    await waitFor(async () => (await procStatus(i.ref.pid, 'Name')) === 'sleep', 'the program to run');
    expect(readProcStat(i.ref.pid)?.startTime).toBe(i.ref.startTime);
    // The gate's fd 3 is closed before the exec: the program has its stdio only.
    const { readdir } = await import('node:fs/promises');
    const fds = await readdir(`/proc/${i.ref.pid}/fd`);
    expect(fds).toEqual(expect.arrayContaining(['0', '1', '2']));
    expect(fds).not.toContain('3');
    expect(await readlink(`/proc/${i.ref.pid}/fd/0`)).toBe('/dev/null');
    expect(await readlink(`/proc/${i.ref.pid}/fd/1`)).toBe(join(paths.logDir, 'stdout.log'));
    process.kill(-i.ref.pid, 'SIGKILL');
    expect(await i.exited).toEqual({ code: null, signal: 'SIGKILL' });

    // The program's environment is exactly a direct start's: the gate shell's own PWD is not passed on.
    const envOf = async (name: string, gated: boolean) => {
      const c = processComponent(name, { command: 'env', env: { GREETING: 'hi' } });
      const inst = track(
        gated ? (await runtime.prepareStart(c, tmp.paths(name))).go() : await runtime.start(c, tmp.paths(name)),
      );
      expect(await inst.exited).toEqual({ code: 0, signal: null });
      return (await readOr(join(tmp.paths(name).logDir, 'stdout.log'))).trim().split('\n').sort();
    };
    const direct = await envOf('env-direct', false);
    expect(direct.map((l) => l.split('=')[0])).toEqual(['GREETING', 'HOME', 'LANG', 'PATH']);
    expect(await envOf('env-gated', true)).toEqual(direct);
  });

  it('exited reports the program exit code; discard() removes a prepared process that never ran its program', async () => {
    const ran = track(
      (
        await runtime.prepareStart(
          processComponent('exit9', { command: 'sh', args: ['-c', 'exit 9'] }),
          tmp.paths('exit9'),
        )
      ).go(),
    );
    expect(await ran.exited).toEqual({ code: 9, signal: null });

    const paths = tmp.paths('unused');
    await mkdir(paths.workDir, { recursive: true, mode: 0o777 });
    const prepared = await runtime.prepareStart(processComponent('unused', { command: 'touch', args: ['ran'] }), paths);
    const i = track(prepared.instance);
    await prepared.discard();
    expect(readProcStat(i.ref.pid)?.startTime === i.ref.startTime && readProcStat(i.ref.pid)?.state !== 'Z').toBe(
      false,
    );
    expect(existsSync(join(paths.workDir, 'ran'))).toBe(false);
  });

  it('fails as start does: a missing command is KS_START_FAILED before anything is spawned', async () => {
    await expectCode(
      runtime.prepareStart(processComponent('nope', { command: 'no-such-command-ks' }), tmp.paths('nope')),
      'KS_START_FAILED',
    );
  });
});

describe('adopt: one slow check for every adopted instance', () => {
  it('each adopted instance is noticed when it dies, the others stay watched', async () => {
    const fast = new ProcessRuntime({ installArtifacts: noArtifacts, adoptPollMs: 50 });
    const a = track(
      await runtime.start(processComponent('ad-a', { command: 'sleep', args: ['1000'] }), tmp.paths('ad-a')),
    );
    const b = track(
      await runtime.start(processComponent('ad-b', { command: 'sleep', args: ['1000'] }), tmp.paths('ad-b')),
    );
    const adoptedA = (await fast.adopt(a.ref))!;
    const adoptedB = (await fast.adopt(b.ref))!;
    let bDone = false;
    void adoptedB.exited.then(() => (bDone = true));
    process.kill(-a.ref.pid, 'SIGKILL');
    expect(await adoptedA.exited).toEqual({ code: null, signal: null });
    expect(bDone).toBe(false);
    process.kill(-b.ref.pid, 'SIGKILL');
    expect(await adoptedB.exited).toEqual({ code: null, signal: null });
  });
});
