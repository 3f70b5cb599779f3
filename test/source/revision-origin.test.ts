// Each revision says where it came from (issue 34: revisions with an explicit origin), set once by whoever made it,
// so the agent asks `rev.origin === 'commit'` (only a commit followed from Git has a rollout wave, or drops the
// holds behind it) instead of guessing from the id's shape. The Git source's commits are checked in
// git-source.test.ts; only a revision whose origin is 'manual' type-checks as Agent.applyManual's argument.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DirectorySource } from '../../src/source/directory-source.js';
import type { Revision } from '../../src/source/revision.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the origin of a revision', () => {
  it('is `directory` for a watched directory, whose id is not a commit id', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ks-origin-'));
    dirs.push(root);
    mkdirSync(join(root, 'plans'));
    writeFileSync(join(root, 'plans/p.toml'), '');
    const got: Revision[] = [];
    const source = new DirectorySource(root, { onRevision: (r) => got.push(r) });
    await source.start();
    await source.close();
    expect(got.map((r) => [r.origin, r.id.startsWith('dir:')])).toEqual([['directory', true]]);
  });
});
