// Secrets of a container component against the real Docker engine: the value in its Env and as a read-only file at
// /run/secrets/NAME (and at an absolute path), the host file root-only and gone once the container is removed.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import { recipeSchema, type Recipe } from '../../src/core/recipe.js';
import { ContainerRuntime } from '../../src/runtime/container-runtime.js';
import { isRuntimeError } from '../../src/runtime/runtime-error.js';
import type { Instance } from '../../src/runtime/runtime.js';
import type { SecretValues } from '../../src/secrets/secret-vault.js';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../support/busybox-image.js';
import { needs } from '../support/requirements.js';
import { engineCli, engineName, engineRequirement, runtimeSocketPaths } from '../support/test-engine.js';
import { inspectOrUndefined, newRunId, ownerTagFor, removeTestContainers } from './container-fixtures.js';
import { isRoot, readOr, tempRoot, type RecipeInput } from './runtime-fixtures.js';
import { parse as parseSchema } from '../../src/core/valid.js';

const RUN = newRunId();
const engine = needs(engineRequirement(), 'busybox');
const sockets = runtimeSocketPaths();
const never = new AbortController().signal;
let tmp: Awaited<ReturnType<typeof tempRoot>>;
let secretsRoot: string;
let password: string;
let values: SecretValues;
/** Every line the runtimes logged, and every error message, for the grep at the end of each test. */
const said: string[] = [];
const runtimes: ContainerRuntime[] = [];

function runtime(more: Partial<ConstructorParameters<typeof ContainerRuntime>[0]> = {}): ContainerRuntime {
  const line = (obj: unknown, msg?: string) => said.push(JSON.stringify(obj) + (msg ?? ''));
  const r = new ContainerRuntime({
    ownerTag: ownerTagFor(RUN, 'agent'),
    secrets: values,
    secretsRoot,
    log: { info: line, warn: line } as never,
    ...(sockets && { socketPaths: sockets }),
    ...more,
  });
  runtimes.push(r);
  return r;
}

function component(name: string, command: string[]): DesiredComponent {
  const raw: RecipeInput = {
    metadata: { name: `com.test.${name}`, version: '1.0.0' },
    lifecycle: {
      run: {
        type: 'container',
        container: {
          image: BUSYBOX_IMAGE,
          pull_policy: 'never',
          command,
          env: { DB_PASSWORD: '{{secret.db_password}}' },
        },
        secrets: [
          { name: 'db_password', path: 'db_password' },
          { name: 'db_password', path: '/etc/app/password' },
        ],
      },
    },
  };
  const recipe = parseSchema(recipeSchema, raw) as Recipe;
  const hash = `v1:${randomBytes(32).toString('hex')}`;
  return {
    name,
    index: 0,
    recipePath: `recipes/${name}.toml`,
    entry: { name, recipe: `recipes/${name}.toml` },
    recipe,
    dependencies: [],
    hash,
    secrets: ['db_password'],
    secretDigests: { db_password: 'digest-db' },
  };
}

const idOf = (i: Instance): string => {
  if (i.ref.kind !== 'container') throw new Error('not a container');
  return i.ref.id;
};

/** `docker exec` of a command line in the container: its stdout, its exit status. */
function inContainer(id: string, script: string): { out: string; status: number | null } {
  const { cmd, args } = engineCli();
  const r = spawnSync(cmd, [...args, 'exec', id, 'sh', '-c', script], { encoding: 'utf8', timeout: 30_000 });
  return { out: r.stdout, status: r.status };
}

describe('the host-side cmd: health check of a container (no engine needed)', () => {
  beforeEach(async () => {
    tmp = await tempRoot();
    password = `pw-${randomBytes(12).toString('hex')}`;
    values = { valueOf: (d) => (d === 'digest-db' ? new TextEncoder().encode(password) : undefined) };
  });
  afterEach(() => tmp.cleanup());

  it('runs without the variables that read a secret (it runs as a user other host processes share): the others it gets', async () => {
    const withCheck = (check: string): DesiredComponent => {
      const raw: RecipeInput = {
        metadata: { name: 'com.test.checked', version: '1.0.0' },
        lifecycle: {
          run: {
            type: 'container',
            container: {
              image: BUSYBOX_IMAGE,
              env: {
                DB_PASSWORD: '{{secret.db_password}}',
                DB_URL: 'postgres://app:{{ secret.db_password }}@db/app',
                PLAIN: 'plain',
              },
            },
            health: { check },
          },
        },
      };
      const recipe = parseSchema(recipeSchema, raw) as Recipe;
      return { ...component('checked', ['sleep', '1000']), recipe };
    };
    const paths = tmp.paths('checked');
    await mkdir(paths.workDir, { recursive: true });
    const rt = new ContainerRuntime({
      ownerTag: ownerTagFor(RUN, 'agent'),
      secrets: values,
      ...(sockets && { socketPaths: sockets }),
    });
    const probe = async (check: string) =>
      (await rt.healthProbe(withCheck(check), paths))!(new AbortController().signal);
    expect(
      await probe('cmd:test "${DB_PASSWORD-unset}${DB_URL-unset}" = unsetunset && test "$PLAIN" = plain'),
    ).toMatchObject({ ok: true });
    const r = await probe('cmd:echo "[$DB_PASSWORD][$DB_URL][$PLAIN]"; exit 1');
    expect(r).toMatchObject({ ok: false, detail: 'exit 1: [][][plain]' });
    expect(r.detail.includes(password)).toBe(false);
    await rt.close();
  });
});

describe.skipIf(engine.skip)(engine.title(`secrets of a container component (a real ${engineName()} engine)`), () => {
  beforeAll(async () => {
    await ensureBusyboxImage();
  }, 90_000);
  beforeEach(async () => {
    tmp = await tempRoot();
    secretsRoot = join(tmp.root, 'secrets');
    password = `pw-${randomBytes(12).toString('hex')}`;
    values = { valueOf: (d) => (d === 'digest-db' ? new TextEncoder().encode(password) : undefined) };
    said.length = 0;
  });
  afterEach(async () => {
    await Promise.all(runtimes.splice(0).map((r) => r.close()));
    await removeTestContainers(RUN);
    for (const line of said) expect(line.includes(password), `said: ${line}`).toBe(false);
    for (const f of ['stdout.log', 'stderr.log'])
      expect((await readOr(join(tmp.root, 'logs', 'app', f))).includes(password)).toBe(false);
    await tmp.cleanup();
  });
  afterAll(async () => {
    await removeTestContainers(RUN);
  });

  it('Env and read-only files at /run/secrets/NAME and an absolute path; the host file is gone once the container is removed', async () => {
    const rt = runtime();
    const c = component('app', ['sh', '-c', 'echo started; exec sleep 1000']);
    const paths = tmp.paths('app');
    await rt.install(c, paths, never);
    const inst = await rt.start(c, paths);
    const id = idOf(inst);

    expect(inContainer(id, 'printf %s "$DB_PASSWORD"').out).toBe(password);
    expect(inContainer(id, 'cat /run/secrets/db_password').out).toBe(password);
    expect(inContainer(id, 'cat /etc/app/password').out).toBe(password);
    // Read-only, whoever the container's user is; the container cannot change it.
    expect(inContainer(id, 'echo x > /run/secrets/db_password').status).not.toBe(0);
    const info = (await inspectOrUndefined(id))!;
    const secretMounts = info.Mounts.filter(
      (m) => m.Destination === '/run/secrets/db_password' || m.Destination === '/etc/app/password',
    );
    expect(secretMounts).toHaveLength(2);
    for (const m of secretMounts) {
      expect(m.RW).toBe(false);
      expect(m.Source.startsWith(`${secretsRoot}/app.`)).toBe(true);
      expect((await stat(m.Source)).mode & 0o7777).toBe(0o444);
      expect((await stat(join(m.Source, '..'))).mode & 0o7777).toBe(0o700);
      if (isRoot) expect((await stat(join(m.Source, '..'))).uid).toBe(0);
    }

    await rt.stop(inst.ref, 1000);
    expect(await inspectOrUndefined(id)).toBeUndefined();
    for (const m of secretMounts) await expect(lstat(m.Source)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readdir(secretsRoot)).toEqual([]);
  });

  it('a container removed as a leftover (removeOwned) takes its files too; a value not held creates nothing', async () => {
    const rt = runtime();
    const c = component('app', ['sleep', '1000']);
    const paths = tmp.paths('app');
    const inst = await rt.start(c, paths);
    expect((await readdir(secretsRoot)).length).toBe(2);
    await runtime().removeOwned(idOf(inst));
    expect(await readdir(secretsRoot)).toEqual([]);

    const err = await runtime({ secrets: { valueOf: () => undefined } })
      .start(c, paths)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isRuntimeError(err, 'KS_SECRET_UNAVAILABLE'), String(err)).toBe(true);
    said.push((err as Error).message);
    expect(await readdir(secretsRoot)).toEqual([]);
  });
});
