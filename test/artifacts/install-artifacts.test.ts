// installArtifacts: all artifacts verified and staged before the work directory is touched; a bad one leaves
// it exactly as it was; links planted in the work directory are replaced, never followed.
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArtifactError, type ArtifactCode } from '../../src/artifacts/artifact-error.js';
import { artifactFileName, installArtifacts, type ArtifactSpec, type InstallArtifactsOptions } from '../../src/artifacts/install-artifacts.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { tempRepo, type TempRepo } from '../support/repo-fixture.js';
import { buildTarGz, buildZip } from './archive-builders.js';
import { snapshot, tempDir } from './fs-snapshot.js';
import { serve, startServer, type TestServer } from './http-fixture.js';

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');
const RECIPE = 'recipes/com.acme.app.toml';
const APP = buildTarGz([
  { name: 'bin/', type: '5' },
  { name: 'bin/app', data: '#!/bin/sh\necho app\n', mode: 0o755 },
  { name: 'share/doc.txt', data: 'docs\n' },
]);
const PLUGINS = buildZip([{ name: 'plugins/one.so', data: 'one', unixMode: 0o100644 }]);
const CONFIG = Buffer.from('key = "value"\n');
const EVIL = buildTarGz([{ name: 'ok', data: 'fine' }, { name: '../escape', data: 'pwned' }]);

let repo: TempRepo;
let t: { dir: string; cleanup(): void };
let server: TestServer;
let workDir: string;

beforeEach(async () => {
  repo = tempRepo({ [RECIPE]: '# recipe\n', 'recipes/plugins.zip': PLUGINS, 'recipes/evil.tgz': EVIL });
  t = tempDir('ks-install-');
  workDir = join(t.dir, 'work', 'com.acme.app');
  server = await startServer({ '/dist/app-1.0.tar.gz': serve(APP), '/dist/app.conf': serve(CONFIG) });
});
afterEach(async () => {
  await server.close();
  repo.cleanup();
  t.cleanup();
});

function options(over: Partial<InstallArtifactsOptions> = {}): InstallArtifactsOptions {
  return { recipeFile: RECIPE, reader: new DirectoryReader(repo.dir), cacheDir: join(t.dir, 'cache'), workDir, maxBytes: 1024 * 1024, ...over };
}

const good = (): ArtifactSpec[] => [
  { uri: `${server.origin}/dist/app-1.0.tar.gz`, sha256: sha(APP), unpack: true },
  { uri: 'plugins.zip', sha256: sha(PLUGINS), unpack: true },
  { uri: `${server.origin}/dist/app.conf`, sha256: sha(CONFIG), unpack: false },
];

async function failure(p: Promise<unknown>, code: ArtifactCode): Promise<ArtifactError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ArtifactError);
  expect((err as ArtifactError).code).toBe(code);
  return err as ArtifactError;
}

describe('installArtifacts', () => {
  it('unpacks archives and copies files into the work directory, through the cache', async () => {
    const r = await installArtifacts(good(), options());
    expect(r.map((a) => [a.installedAs, a.cached])).toEqual([
      ['.', false],
      ['.', false],
      ['app.conf', false],
    ]);
    expect(readFileSync(join(workDir, 'bin/app'), 'utf8')).toBe('#!/bin/sh\necho app\n');
    expect(statSync(join(workDir, 'bin/app')).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(workDir, 'share/doc.txt'), 'utf8')).toBe('docs\n');
    expect(readFileSync(join(workDir, 'plugins/one.so'), 'utf8')).toBe('one');
    expect(readFileSync(join(workDir, 'app.conf'))).toEqual(CONFIG);
    expect(statSync(join(workDir, 'app.conf')).mode & 0o777).toBe(0o644);
    // Nothing staged is left next to the work directory.
    expect(readdirSync(join(t.dir, 'work'))).toEqual(['com.acme.app']);

    const again = await installArtifacts(good(), options());
    expect(again.every((a) => a.cached)).toBe(true);
    expect(server.requests()).toBe(2);
  });

  it('keeps what the component created in the work directory, and replaces what the artifacts provide', async () => {
    mkdirSync(join(workDir, 'data'), { recursive: true });
    writeFileSync(join(workDir, 'data/db'), 'state');
    mkdirSync(join(workDir, 'bin'));
    writeFileSync(join(workDir, 'bin/app'), 'old version');
    await installArtifacts(good(), options());
    expect(readFileSync(join(workDir, 'data/db'), 'utf8')).toBe('state');
    expect(readFileSync(join(workDir, 'bin/app'), 'utf8')).toBe('#!/bin/sh\necho app\n');
  });

  it('replaces symlinks planted in the work directory instead of writing through them', async () => {
    const outside = join(t.dir, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'app'), 'outside canary');
    writeFileSync(join(outside, 'conf'), 'outside canary');
    mkdirSync(workDir, { recursive: true });
    symlinkSync(outside, join(workDir, 'bin'));
    symlinkSync(join(outside, 'conf'), join(workDir, 'app.conf'));
    await installArtifacts(good(), options());
    expect(lstatSync(join(workDir, 'bin')).isDirectory()).toBe(true);
    expect(lstatSync(join(workDir, 'app.conf')).isFile()).toBe(true);
    expect(readFileSync(join(outside, 'app'), 'utf8')).toBe('outside canary');
    expect(readFileSync(join(outside, 'conf'), 'utf8')).toBe('outside canary');
  });

  it('a bad digest on the last artifact leaves the work directory exactly as it was', async () => {
    mkdirSync(workDir, { recursive: true });
    writeFileSync(join(workDir, 'app.conf'), 'previous');
    const before = snapshot(join(t.dir, 'work'));
    const list = good();
    list[2] = { ...list[2]!, sha256: sha('not the config') };
    await failure(installArtifacts(list, options()), 'KS_ARTIFACT_DIGEST_MISMATCH');
    expect(snapshot(join(t.dir, 'work'))).toEqual(before);
  });

  it('an unsafe archive leaves the work directory exactly as it was', async () => {
    mkdirSync(workDir, { recursive: true });
    writeFileSync(join(workDir, 'app.conf'), 'previous');
    const before = snapshot(join(t.dir, 'work'));
    const list = [...good(), { uri: 'evil.tgz', sha256: sha(EVIL), unpack: true }];
    const err = await failure(installArtifacts(list, options()), 'KS_UNPACK_UNSAFE_ENTRY');
    expect(err.data).toMatchObject({ entry: '../escape', reason: 'parent-directory' });
    expect(snapshot(join(t.dir, 'work'))).toEqual(before);
  });

  it('an artifact URI without a file name is refused before anything is fetched', async () => {
    await failure(installArtifacts([{ uri: `${server.origin}/`, sha256: sha('x'), unpack: false }], options()), 'KS_ARTIFACT_BAD_URI');
    expect(server.requests()).toBe(0);
  });
});

describe('artifactFileName', () => {
  it('is the last segment of the URI', () => {
    expect(artifactFileName('https://h/a/b/tool-1.2?x=1#f', RECIPE)).toBe('tool-1.2');
    expect(artifactFileName('https://h/a/my%20tool', RECIPE)).toBe('my tool');
    expect(artifactFileName('file:///opt/x/y.bin', RECIPE)).toBe('y.bin');
    expect(artifactFileName('bin/tool', RECIPE)).toBe('tool');
    expect(() => artifactFileName('https://h/a/%2e%2e', RECIPE)).toThrow(ArtifactError);
    expect(() => artifactFileName('https://h/a/x%2Fy', RECIPE)).toThrow(ArtifactError);
  });
});
