// The agent keeps V8's young generation small (issue 16: RSS on small devices): `--semi-space-growth-factor=1` set
// at run time, unless the operator chose a semi-space flag or KEYSTONE_V8_DEFAULTS=1.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/example-repo.js';

/** new_space's size in a fresh node after allocating ~100 MiB of short-lived objects, with or without the agent's setting. */
function newSpaceMiB(
  apply: boolean,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): { applied: boolean; newSpaceMiB: number } {
  const url = pathToFileURL(join(PROJECT_ROOT, 'dist', 'cli', 'keystone.js')).href;
  const script = `
    import v8 from 'node:v8';
    const { keepYoungGenerationSmall } = await import(${JSON.stringify(url)});
    const applied = ${apply} ? keepYoungGenerationSmall(process.env) : false;
    let keep = [];
    for (let i = 0; i < 2e6; i++) { keep.push({ a: i, b: 'x' + i }); if (keep.length > 1000) keep = []; }
    const s = v8.getHeapSpaceStatistics().find((x) => x.space_name === 'new_space');
    console.log(JSON.stringify({ applied, newSpaceMiB: s.space_size / 1048576 }));`;
  const r = spawnSync(process.execPath, [...nodeArgs, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim()) as { applied: boolean; newSpaceMiB: number };
}

describe('keepYoungGenerationSmall', () => {
  it('keeps new space at its start size where V8 alone grows it', () => {
    const small = newSpaceMiB(true);
    const grown = newSpaceMiB(false);
    expect(small.applied).toBe(true);
    expect(small.newSpaceMiB).toBeLessThanOrEqual(2);
    expect(grown.newSpaceMiB).toBeGreaterThan(small.newSpaceMiB);
  });

  it('leaves V8 alone with KEYSTONE_V8_DEFAULTS=1 or a semi-space flag of the operator', () => {
    expect(newSpaceMiB(true, { KEYSTONE_V8_DEFAULTS: '1' }).applied).toBe(false);
    expect(newSpaceMiB(true, {}, ['--max-semi-space-size=4']).applied).toBe(false);
    expect(newSpaceMiB(true, { NODE_OPTIONS: '--max-semi-space-size=4' }).applied).toBe(false);
  });
});
