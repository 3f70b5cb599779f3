// `keystonectl verify --artifacts`: every signed recipe's artifacts fetched through the cache and checked.
import { appendFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { progressLine } from '../../src/cli/render/progress-bar.js';
import { runCtl } from '../support/cli-run.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';

let repo: ExampleRepo;
let cache: string;
beforeEach(async () => {
  repo = await exampleRepo();
  cache = mkdtempSync(join(tmpdir(), 'keystone-cache-'));
});
afterEach(() => {
  repo.cleanup();
  rmSync(cache, { recursive: true, force: true });
});

describe('keystonectl verify --artifacts', () => {
  it('fetches each artifact once into the digest-addressed cache, then serves it from there', async () => {
    const first = await runCtl(
      ['verify', '--repo', repo.dir, ...repo.trust, '--artifacts', '--cache', cache, '--json'],
      '/',
    );
    expect(first.code, first.stderr).toBe(0);
    const out = JSON.parse(first.stdout);
    expect(out.artifacts).toHaveLength(6); // six process recipes (the gateway's two members among them); the container recipe and the composite have none
    expect(out.artifacts.every((a: { cached: boolean }) => !a.cached)).toBe(true);
    expect(readdirSync(join(cache, 'sha256'))).toHaveLength(6);
    const second = JSON.parse(
      (await runCtl(['verify', '--repo', repo.dir, ...repo.trust, '--artifacts', '--cache', cache, '--json'], '/'))
        .stdout,
    );
    expect(second.artifacts.every((a: { cached: boolean }) => a.cached)).toBe(true);
  });

  it('an artifact that no longer matches its signed digest is refused with exit code 2', async () => {
    appendFileSync(join(repo.dir, 'artifacts/fake-api.mjs'), '// tampered\n');
    const r = await runCtl(['verify', '--repo', repo.dir, ...repo.trust, '--artifacts', '--cache', cache], '/');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('KS_ARTIFACT_DIGEST_MISMATCH');
    expect(r.stderr).toContain('fake-api.mjs');
  });
});

describe('the download progress line', () => {
  it.each([
    [0, 100, 'x [........................]   0% 0 B/100 B'],
    [50, 100, 'x [############............]  50% 50 B/100 B'],
    [3 * 1024 * 1024, 3 * 1024 * 1024, 'x [########################] 100% 3.0 MiB/3.0 MiB'],
    [2048, undefined, 'x 2.0 KiB'],
  ])('%d of %s', (received, total, line) => {
    expect(progressLine('x', received, total)).toBe(line);
  });
});
