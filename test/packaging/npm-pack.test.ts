// What `npm pack` ships (package.json's `files`): the launchers and dist/ as built, without the build's source maps,
// its incremental build info, TypeScript sources, tests or fixtures — an operator who installs the tarball (the CI
// workflows of docs/signing.md do) gets the program and nothing of the repository around it.
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

describe('npm pack', () => {
  it('ships bin/ and dist/ without source maps, build info, sources or tests', () => {
    // --ignore-scripts: prepack would rebuild dist/; the test run has built it already (pretest).
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const files = (JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
    expect(files).toContain('bin/keystone.js');
    expect(files).toContain('dist/cli/keystone.js');
    expect(files.filter((f) => !/^(bin|dist)\//.test(f) && !/^(package\.json|README\.md|LICENSE)$/.test(f))).toEqual(
      [],
    );
    expect(files.filter((f) => f.endsWith('.map') || f.endsWith('.tsbuildinfo') || /\.tsx?$/.test(f))).toEqual([]);
  });
});
