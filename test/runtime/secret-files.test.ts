// Secrets where a process component starts (SPEC §16): its environment and its files, with real processes. The values
// reach the program and nowhere else: not its logs, its command line, an error or a health check's detail.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import { recipeSchema, type Recipe } from '../../src/core/recipe.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { isRuntimeError, type RuntimeCode } from '../../src/runtime/runtime-error.js';
import type { ComponentPaths, Instance } from '../../src/runtime/runtime.js';
import { writeSecretFile } from '../../src/runtime/secret-file-ops.js';
import { chooseSecretsRoot, recordedSecretsRoot } from '../../src/runtime/secrets-root.js';
import type { SecretValues } from '../../src/secrets/secret-vault.js';
import { GroupReaper, isRoot, liveGroup, readOr, tempRoot, waitFor, type RecipeInput } from './runtime-fixtures.js';
import { parse as parseSchema } from '../../src/core/valid.js';

type RunInput = NonNullable<NonNullable<RecipeInput['lifecycle']>['run']>;

const reaper = new GroupReaper();
const noArtifacts = async () => {};
/** As root the component runs as nobody, so that the files' owner is the run user's, not the agent's. */
const RUN_UID = isRoot ? 65534 : process.getuid!();
const security = isRoot ? { user: 'nobody' } : undefined;

let tmp: Awaited<ReturnType<typeof tempRoot>>;
let secretsRoot: string;
/** Fresh values per test: a grep for them finds only this test's traces. */
let dbPassword: string;
let tlsKey: string;
let values: SecretValues;
/** Every message this test's failures carried, for the grep at the end. */
const said: string[] = [];

beforeEach(async () => {
  tmp = await tempRoot();
  secretsRoot = join(tmp.root, 'secrets');
  dbPassword = `db-${randomBytes(12).toString('hex')}`;
  tlsKey = `-----BEGIN KEY-----\n${randomBytes(24).toString('base64')}\n-----END KEY-----\n`;
  const held = new Map([
    ['digest-db', new TextEncoder().encode(dbPassword)],
    ['digest-tls', new TextEncoder().encode(tlsKey)],
  ]);
  values = { valueOf: (d) => held.get(d) };
  said.length = 0;
});
afterEach(async () => {
  await reaper.killAll();
  await expectNoValueUnder(tmp.root, 'logs');
  for (const m of said) expectNoValue(m);
  await tmp.cleanup();
});

function runtime(more: Partial<ConstructorParameters<typeof ProcessRuntime>[0]> = {}): ProcessRuntime {
  return new ProcessRuntime({ installArtifacts: noArtifacts, secrets: values, secretsRoot, ...more });
}

/** A process component reading db_password from its environment and tls_key as ./tls.key. */
function component(
  name: string,
  exec: { command: string; args?: string[] },
  more: { health?: RunInput['health']; install?: string; files?: boolean } = {},
): DesiredComponent {
  const raw: RecipeInput = {
    metadata: { name: `com.test.${name}`, version: '1.0.0' },
    lifecycle: {
      run: {
        type: 'process',
        exec: {
          ...exec,
          env: { DB_PASSWORD: '{{secret.db_password}}', DB_URL: 'postgres://app:{{secret.db_password}}@db/app' },
        },
        ...(more.files !== false && { secrets: [{ name: 'tls_key', path: 'tls.key' }] }),
        ...(security && { security }),
        ...(more.health && { health: more.health }),
      },
      ...(more.install && { install: { script: more.install } }),
    },
  };
  const recipe = parseSchema(recipeSchema, raw) as Recipe;
  return {
    name,
    index: 0,
    recipePath: `recipes/${name}.toml`,
    entry: { name, recipe: `recipes/${name}.toml` },
    recipe,
    dependencies: [],
    hash: `v1:${randomBytes(8).toString('hex')}`,
    secrets: ['db_password', 'tls_key'],
    secretDigests: { db_password: 'digest-db', tls_key: 'digest-tls' },
  };
}

/** What the component read, written by itself (the test's only window into it): env.out and file.out. */
const READER = [
  '-c',
  'printf %s "$DB_PASSWORD" > env.tmp && mv env.tmp env.out; cat ./tls.key > file.tmp && mv file.tmp file.out; exec sleep 1000',
];

const track = (i: Instance): Instance & { ref: { kind: 'process'; pid: number; startTime: string } } => {
  if (i.ref.kind !== 'process') throw new Error('not a process');
  reaper.add(i.ref.pid);
  return i as Instance & { ref: { kind: 'process'; pid: number; startTime: string } };
};

function expectNoValue(text: string): void {
  expect(text.includes(dbPassword), 'the database password was shown').toBe(false);
  for (const line of tlsKey.split('\n'))
    if (line.length > 20) expect(text.includes(line), 'the TLS key was shown').toBe(false);
}

/** Every file under `root/sub` (the component logs), read and grepped. */
async function expectNoValueUnder(root: string, sub: string): Promise<void> {
  const walk = async (dir: string): Promise<string[]> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const nested = await Promise.all(
      entries.map((e) => (e.isDirectory() ? walk(join(dir, e.name)) : Promise.resolve([join(dir, e.name)]))),
    );
    return nested.flat();
  };
  for (const f of await walk(join(root, sub))) expectNoValue(await readOr(f));
}

async function expectCode(p: Promise<unknown>, code: RuntimeCode): Promise<Error> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isRuntimeError(err, code), `expected ${code}, got ${String(err)}`).toBe(true);
  said.push((err as Error).message);
  return err as Error;
}

/** The per-start directories and records under the secrets root. */
const secretEntries = async () => (await readdir(secretsRoot).catch(() => [] as string[])).sort();

async function readsBack(paths: ComponentPaths): Promise<{ env: string; file: string }> {
  const env = await waitFor(() => readOr(join(paths.workDir, 'env.out')), 'the component to write env.out');
  const file = await waitFor(() => readOr(join(paths.workDir, 'file.out')), 'the component to write file.out');
  return { env, file };
}

describe('secrets of a process component', () => {
  it('reaches the program: its environment and ./tls.key, a 0400 file of its run user on a link; gone after stop', async () => {
    const rt = runtime();
    const c = component('reader', { command: '/bin/sh', args: READER });
    const paths = tmp.paths('reader');
    const i = track(await rt.start(c, paths));
    expect(await readsBack(paths)).toEqual({ env: dbPassword, file: tlsKey });

    // The link, and the file it names: the run user's, read-only, in a directory of the agent's the run user can only
    // pass through (to open its file by name): not list, not change.
    const link = join(paths.workDir, 'tls.key');
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    const target = await readlink(link);
    expect(target.startsWith(`${secretsRoot}/reader.`)).toBe(true);
    const file = await stat(target);
    expect(file.mode & 0o7777).toBe(0o400);
    expect(file.uid).toBe(RUN_UID);
    const dir = await stat(join(target, '..'));
    expect(dir.mode & 0o7777).toBe(0o711);
    expect(dir.uid).toBe(process.geteuid!());
    expect((await stat(secretsRoot)).mode & 0o7777).toBe(isRoot ? 0o711 : 0o700);

    // Not on its command line (ps), not in its logs (checked after each test).
    const cmdline = await readFile(`/proc/${i.ref.pid}/cmdline`, 'utf8');
    expectNoValue(cmdline);

    await rt.stop(i.ref, 2000);
    await expect(lstat(link)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(lstat(target)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await secretEntries()).toEqual([]);
  });

  it.skipIf(!isRoot)(
    'the run user reads its file by its link, and can neither list, change nor write its directory',
    async () => {
      const rt = runtime();
      const paths = tmp.paths('confined');
      const i = track(await rt.start(component('confined', { command: '/bin/sh', args: READER }), paths));
      expect(await readsBack(paths)).toEqual({ env: dbPassword, file: tlsKey });
      const target = await readlink(join(paths.workDir, 'tls.key'));
      const dir = join(target, '..');
      const asRunUser = (script: string) =>
        spawnSync(
          '/usr/bin/setpriv',
          [`--reuid=${RUN_UID}`, `--regid=${RUN_UID}`, '--clear-groups', '/bin/sh', '-c', script, 'sh', dir, target],
          { encoding: 'utf8', timeout: 10_000 },
        );
      expect(asRunUser('cat "$2"').stdout).toBe(tlsKey);
      for (const attempt of [
        'chmod 700 "$1"',
        'ls "$1"',
        'touch "$1/filler"',
        'mv "$2" "$1/moved"',
        'rm -f "$2"',
        'chown 0 "$1"',
      ]) {
        const r = asRunUser(attempt);
        expect(r.status, `${attempt}: ${r.stdout}${r.stderr}`).not.toBe(0);
      }
      expect((await stat(dir)).mode & 0o7777).toBe(0o711);
      expect(await readdir(dir)).toEqual(['tls.key']);
      expect(await readFile(target, 'utf8')).toBe(tlsKey);
      await rt.stop(i.ref, 2000);
      expect(await secretEntries()).toEqual([]);
    },
  );

  it('a prepared start (restart delay) gets them too, a discarded one leaves none; a process that exits by itself leaves none behind', async () => {
    const rt = runtime();
    const paths = tmp.paths('gated');
    const prepared = await rt.prepareStart(component('gated', { command: '/bin/sh', args: READER }), paths);
    const i = track(prepared.go());
    expect(await readsBack(paths)).toEqual({ env: dbPassword, file: tlsKey });
    await rt.stop(i.ref, 2000);
    expect(await secretEntries()).toEqual([]);
    const unused = await rt.prepareStart(component('gated', { command: '/bin/sh', args: READER }), paths);
    expect((await secretEntries()).length).toBe(2);
    await unused.discard();
    expect(await secretEntries()).toEqual([]);

    const once = tmp.paths('once');
    const j = track(
      await rt.start(component('once', { command: '/bin/sh', args: ['-c', 'cat ./tls.key > file.out'] }), once),
    );
    await j.exited;
    expect(await readOr(join(once.workDir, 'file.out'))).toBe(tlsKey);
    await waitFor(async () => (await secretEntries()).length === 0, 'the files of an exited process to be removed');
    await expect(lstat(join(once.workDir, 'tls.key'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('the install script and a cmd: health check see the same environment; what they print is not repeated', async () => {
    const rt = runtime();
    const paths = tmp.paths('checked');
    await rt.install(
      component('checked', { command: 'sleep', args: ['1000'] }, { install: 'printf %s "$DB_PASSWORD" > install.out' }),
      paths,
      new AbortController().signal,
    );
    expect(await readFile(join(paths.workDir, 'install.out'), 'utf8')).toBe(dbPassword);

    // A script that prints the value: its own output has it (the component's doing, kept apart from the logs grepped),
    // the error that quotes its last line does not.
    const failing = component(
      'checked',
      { command: 'sleep', args: ['1000'] },
      { install: 'echo "$DB_PASSWORD" >&2; exit 3' },
    );
    const e = await expectCode(
      rt.install(failing, { ...paths, logDir: join(tmp.root, 'own-output') }, new AbortController().signal),
      'KS_INSTALL_FAILED',
    );
    expect(e.message).toContain('[secret]');

    const checked = component('checked', { command: 'sleep', args: ['1000'] }, { health: { check: 'cmd:true' } });
    // The check sees the filled environment: DB_URL no longer holds the placeholder.
    const probe = (await rt.healthProbe(
      withCheck(checked, 'cmd:case "$DB_URL" in *secret.*) exit 1;; esac; test -n "$DB_PASSWORD"'),
      paths,
    ))!;
    expect(await probe(new AbortController().signal)).toMatchObject({ ok: true });
    const loud = (await rt.healthProbe(withCheck(checked, 'cmd:echo "password is $DB_PASSWORD"; exit 1'), paths))!;
    const r = await loud(new AbortController().signal);
    expect(r.ok).toBe(false);
    expect(r.detail).toBe('exit 1: password is [secret]');
  });

  it('a start-first roll: the old instance stopping takes its own files, not the new one’s', async () => {
    const rt = runtime();
    const paths = tmp.paths('rolled');
    const c = component('rolled', { command: 'sleep', args: ['1000'] });
    const old = track(await rt.start(c, paths));
    const next = track(await rt.start({ ...c, hash: 'v1:next' }, paths));
    const link = join(paths.workDir, 'tls.key');
    const nextTarget = await readlink(link);
    expect((await secretEntries()).length).toBe(4); // two directories, two records
    await rt.stop(old.ref, 2000);
    expect(await readlink(link)).toBe(nextTarget);
    expect(await readFile(nextTarget, 'utf8')).toBe(tlsKey);
    await rt.stop(next.ref, 2000);
    expect(await secretEntries()).toEqual([]);
  });

  it('an agent started again finds the files of an adopted instance by its record, and removes them at its stop', async () => {
    const first = runtime();
    const paths = tmp.paths('adopted');
    const i = track(await first.start(component('adopted', { command: 'sleep', args: ['1000'] }), paths));
    const second = runtime();
    const adopted = (await second.adopt(i.ref))!;
    expect(adopted).toBeDefined();
    await second.stop(adopted.ref, 2000);
    expect(await secretEntries()).toEqual([]);
    await expect(lstat(join(paths.workDir, 'tls.key'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('an agent started again whose recorded directory was changed: new starts go to a new one, the old one goes once its instances have', async () => {
    const shm = join(tmp.root, 'shm');
    const stateDir = join(tmp.root, 'state');
    await mkdir(shm, { mode: 0o1777 });
    await chmod(shm, 0o1777);
    await mkdir(stateDir, { mode: 0o711 });
    const rootOf = () =>
      chooseSecretsRoot(stateDir, {
        mounts: `/dev/vda / ext4 rw 0 0\ntmpfs ${shm} tmpfs rw 0 0`,
        run: join(tmp.root, 'no-run'),
        shm,
      });
    const first = runtime({ secretsRoot: rootOf() });
    const c = component('kept', { command: 'sleep', args: ['1000'] });
    const i = track(await first.start(c, tmp.paths('kept')));
    const old = recordedSecretsRoot(stateDir)!;
    expect(old.startsWith(`${shm}/keystone-`)).toBe(true);
    await chmod(old, 0o750); // not as the agent leaves it (root, or the agent's user, did this)

    // The first agent is gone (its process died): in this one process its runtime would still see its child exit and
    // remove files beside the second's, racing it. What a dead agent does: nothing.
    Object.assign((first as unknown as { secrets: object }).secrets, { release: async () => {} });
    const root = rootOf();
    const second = runtime({ secretsRoot: root });
    const adopted = (await second.adopt(i.ref))!;
    await second.sweepSecretFiles();
    expect((await readdir(old)).length).toBe(2); // the running instance's directory and record
    const j = track(await second.start({ ...c, name: 'fresh' }, tmp.paths('fresh')));
    const now = recordedSecretsRoot(stateDir)!;
    expect(now).not.toBe(old);
    expect((await readlink(join(tmp.paths('fresh').workDir, 'tls.key'))).startsWith(`${now}/fresh.`)).toBe(true);
    expect(root.former()).toEqual([old]);

    await second.stop(adopted.ref, 2000);
    await expect(lstat(old)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(lstat(join(tmp.paths('kept').workDir, 'tls.key'))).rejects.toMatchObject({ code: 'ENOENT' });
    await second.stop(j.ref, 2000);
    expect(await readdir(now)).toEqual([]);
    // The agent after that one no longer lists the old directory.
    expect(rootOf().former()).toEqual([]);
  });

  it('an agent that died left files: the next one sweeps those of instances gone, keeps those of live ones', async () => {
    // The first agent is a process of its own (dist/), which exits leaving its two components running.
    const script = `
      const { ProcessRuntime } = await import(${JSON.stringify(join(process.cwd(), 'dist/runtime/process-runtime.js'))});
      const [root, value, ...comps] = process.argv.slice(1);
      const held = new TextEncoder().encode(value);
      const rt = new ProcessRuntime({ installArtifacts: async () => {}, secrets: { valueOf: () => held }, secretsRoot: root });
      for (const c of comps.map((t) => JSON.parse(t))) {
        const i = await rt.start(c.component, c.paths);
        console.log(JSON.stringify(i.ref));
      }
      process.exit(0);`;
    const comps = ['doomed', 'lives'].map((n) => ({
      component: component(n, { command: 'sleep', args: ['1000'] }),
      paths: tmp.paths(n),
    }));
    const r = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', script, secretsRoot, dbPassword, ...comps.map((c) => JSON.stringify(c))],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect(r.status, r.stderr).toBe(0);
    const [doomed, lives] = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { pid: number; startTime: string });
    reaper.add(doomed!.pid);
    reaper.add(lives!.pid);
    expect((await secretEntries()).length).toBe(4);
    // Killed while no agent watched (an orphan sweep does this).
    process.kill(-doomed!.pid, 'SIGKILL');
    await waitFor(() => liveGroup(doomed!.pid).length === 0, 'the doomed group to die');
    await runtime().sweepSecretFiles();
    const left = await secretEntries();
    expect(left.length).toBe(2);
    expect(left.every((e) => e.startsWith('lives.'))).toBe(true);
    await expect(lstat(join(tmp.paths('doomed').workDir, 'tls.key'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await lstat(join(tmp.paths('lives').workDir, 'tls.key'))).isSymbolicLink()).toBe(true);
  });

  it('a value the agent does not hold is KS_SECRET_UNAVAILABLE before anything is spawned or written', async () => {
    const c = component('unheld', { command: 'touch', args: ['ran'] });
    const paths = tmp.paths('unheld');
    const e = await expectCode(
      runtime({ secrets: { valueOf: () => undefined } }).start(c, paths),
      'KS_SECRET_UNAVAILABLE',
    );
    expect(e.message).toMatch(/unheld reads secret db_password/);
    await expectCode(runtime({ secrets: undefined }).start(c, paths), 'KS_SECRET_UNAVAILABLE');
    await expectCode(
      runtime({ secretsRoot: undefined }).start(
        { ...c, secretDigests: { db_password: 'digest-db', tls_key: 'digest-tls' } },
        paths,
      ),
      'KS_SECRET_UNAVAILABLE',
    );
    expect(await readOr(join(paths.workDir, 'ran'))).toBe('');
    expect(await secretEntries()).toEqual([]);
  });

  it('refuses (KS_SECRET_PATH_TAKEN) when the run user has its own file where the link would go, and leaves it', async () => {
    const paths = tmp.paths('taken');
    await mkdir(paths.workDir, { recursive: true });
    await writeFile(join(paths.workDir, 'tls.key'), 'mine');
    const e = await expectCode(
      runtime().start(component('taken', { command: 'touch', args: ['ran'] }), paths),
      'KS_SECRET_PATH_TAKEN',
    );
    expect((e as { data?: { path?: string } }).data?.path).toBe(join(paths.workDir, 'tls.key'));
    expect(await readFile(join(paths.workDir, 'tls.key'), 'utf8')).toBe('mine');
    expect(await readOr(join(paths.workDir, 'ran'))).toBe('');
    expect(await secretEntries()).toEqual([]);
  });

  it('replaces a link in the work directory without writing through it', async () => {
    const paths = tmp.paths('relinked');
    await mkdir(paths.workDir, { recursive: true });
    const decoy = join(tmp.root, 'decoy');
    await writeFile(decoy, 'untouched');
    await symlink(decoy, join(paths.workDir, 'tls.key'));
    const rt = runtime();
    const i = track(await rt.start(component('relinked', { command: '/bin/sh', args: READER }), paths));
    expect((await readsBack(paths)).file).toBe(tlsKey);
    expect(await readFile(decoy, 'utf8')).toBe('untouched');
    await rt.stop(i.ref, 2000);
  });

  it('follows no link planted in the secrets directory: not as the root, not at a file’s name', async () => {
    const decoyDir = join(tmp.root, 'decoy-dir');
    await mkdir(decoyDir);
    await symlink(decoyDir, secretsRoot);
    const e = await expectCode(
      runtime().start(component('planted', { command: 'touch', args: ['ran'] }), tmp.paths('planted')),
      'KS_SECRET_FILE_FAILED',
    );
    expect(e.message).toMatch(/symbolic link/);
    expect(await readdir(decoyDir)).toEqual([]);

    // The file itself: written under a fresh name and renamed over the link, whose target keeps its bytes.
    const dir = join(tmp.root, 'direct');
    await mkdir(dir);
    const decoy = join(tmp.root, 'decoy-file');
    await writeFile(decoy, 'untouched');
    await symlink(decoy, join(dir, 'tls.key'));
    await writeSecretFile(dir, 'tls.key', new TextEncoder().encode(tlsKey), { mode: 0o400 });
    expect(await readFile(decoy, 'utf8')).toBe('untouched');
    const st = await lstat(join(dir, 'tls.key'));
    expect(st.isFile()).toBe(true);
    expect(st.mode & 0o7777).toBe(0o400);
    expect(await readdir(dir)).toEqual(['tls.key']);
  });
});

/** `c` with another health check (as a revision that changes only it). */
function withCheck(c: DesiredComponent, check: string): DesiredComponent {
  const run = c.recipe.lifecycle.run;
  return {
    ...c,
    recipe: { ...c.recipe, lifecycle: { ...c.recipe.lifecycle, run: { ...run, health: { ...run.health!, check } } } },
  };
}
