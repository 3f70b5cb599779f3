// The whole install path as in production (ProcessRuntime.install → installArtifacts → chown in the private
// staging tree → mergeTree), as root for a run user (nobody) whose process races the install: whatever it swaps,
// nothing outside its work directory is created, replaced, removed or given to it.
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { artifactInstaller } from '../../src/runtime/artifact-installer.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { processComponent } from '../runtime/runtime-fixtures.js';
import { tempRepo, type TempRepo } from '../support/repo-fixture.js';
import { needs } from '../support/requirements.js';
import { buildTarGz } from './archive-builders.js';
import { snapshot, tempDir } from './fs-snapshot.js';
import { startRacer, type Racer } from './run-user-racer.js';

/** Only root can install for another user (the run user, nobody) and chown to it. */
const root = needs('root');
const APP = buildTarGz([
  { name: 'conf/', type: '5' },
  { name: 'conf/app.conf', data: 'key = 1\n' },
  { name: 'conf/sub/', type: '5' },
  { name: 'conf/sub/one.so', data: 'one' },
  { name: 'conf/sub/two.so', data: 'two' },
]);
const never = new AbortController().signal;

let t: { dir: string; cleanup(): void };
let repo: TempRepo;
let racer: Racer | undefined;

beforeEach(() => {
  t = tempDir('ks-install-race-');
  chmodSync(t.dir, 0o755);
  repo = tempRepo({ 'recipes/app.toml': '# recipe\n', 'recipes/app.tgz': APP });
});
afterEach(async () => {
  await racer?.stop();
  racer = undefined;
  repo.cleanup();
  t.cleanup();
});

/** Every entry under `root` with its owner: what the run user must never come to own. */
function owners(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    const st = lstatSync(rel ? join(root, rel) : root);
    out[rel] = `${st.uid}:${st.gid}`;
    if (st.isDirectory()) for (const n of readdirSync(join(root, rel))) walk(rel ? `${rel}/${n}` : n);
  };
  walk('');
  return out;
}

describe.skipIf(root.skip)(root.title('installing artifacts for a run user whose process races the install'), () => {
  it('never places, replaces, removes or chowns anything outside the work directory', async () => {
    const outside = join(t.dir, 'root-only');
    mkdirSync(join(outside, 'sub'), { recursive: true, mode: 0o700 });
    chmodSync(outside, 0o700);
    writeFileSync(join(outside, 'app.conf'), 'root canary');
    writeFileSync(join(outside, 'sub', 'one.so'), 'root canary');
    const before = { content: snapshot(outside), owners: owners(outside) };

    const rt = new ProcessRuntime({
      installArtifacts: artifactInstaller({ reader: () => new DirectoryReader(repo.dir), cacheDir: join(t.dir, 'cache'), maxBytes: 1024 * 1024 }),
    });
    const c = processComponent('app', { command: 'sleep', args: ['1'] }, { security: { user: 'nobody' } });
    c.recipe.artifacts.push({ uri: 'app.tgz', sha256: createHash('sha256').update(APP).digest('hex'), unpack: true });
    const paths = { workDir: join(t.dir, 'components', 'app', 'work'), logDir: join(t.dir, 'components', 'app', 'logs') };
    await rt.install(c, paths, never);
    expect(readFileSync(join(paths.workDir, 'conf/sub/one.so'), 'utf8')).toBe('one');
    expect(lstatSync(join(paths.workDir, 'conf/sub/one.so')).uid).toBe(65534);

    racer = await startRacer(paths.workDir, outside, ['conf', 'conf/sub']);
    let installed = 0;
    for (let i = 0; i < 60; i++) {
      // The racer may make an install fail (a directory gone for a moment): that is its own loss.
      installed += await rt.install(c, paths, never).then(
        () => 1,
        () => 0,
      );
      expect({ content: snapshot(outside), owners: owners(outside) }, `after install ${i}`).toEqual(before);
    }
    expect(racer.running(), 'the racer ran throughout').toBe(true);
    expect(installed).toBeGreaterThan(0);
  }, 120_000);
});
