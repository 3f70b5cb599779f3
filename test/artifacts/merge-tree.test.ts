// mergeTree as root into a work directory its run user (uid 65534) can write: whatever that user swaps while
// the merge runs, no file is placed, replaced or removed outside the directories the agent checked.
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isArtifactError } from '../../src/artifacts/artifact-error.js';
import { MAX_REMOVE_DEPTH, mergeTree, type MergeTreeSeam } from '../../src/artifacts/merge-tree.js';
import { chownTree, prepareWorkDir } from '../../src/runtime/work-dir.js';
import { needs } from '../support/requirements.js';
import { snapshot, tempDir } from './fs-snapshot.js';
import { RUN_USER_SETPRIV, startRacer, type Racer } from './run-user-racer.js';

const RUN = { uid: 65534, gid: 65534 };
/** Only root can hand the work directory to another user (the run user, nobody). */
const root = needs('root');

let t: { dir: string; cleanup(): void };
/** The component's directory (root's, like <state>/components/NAME), its work directory (the run user's) and a root-only directory. */
let componentDir: string;
let work: string;
let outside: string;
let outsideBefore: Record<string, string>;

beforeEach(async () => {
  t = tempDir('ks-merge-');
  chmodSync(t.dir, 0o755); // the run user must reach its work directory, as under a state directory
  componentDir = join(t.dir, 'components', 'app');
  work = join(componentDir, 'work');
  await prepareWorkDir(work, RUN);
  // What the run user must never get at: root's, mode 0700 (like /root or /etc/ssl/private).
  outside = join(t.dir, 'root-only');
  mkdirSync(join(outside, 'ssl'), { recursive: true, mode: 0o700 });
  chmodSync(outside, 0o700);
  writeFileSync(join(outside, 'secret'), 'root canary');
  writeFileSync(join(outside, 'ssl', 'key'), 'root key');
  outsideBefore = snapshot(outside);
});
afterEach(async () => {
  await stopRacer();
  t.cleanup();
});

/** The racing process of the run user, while a test runs one. */
let racer: Racer | undefined;
async function stopRacer(): Promise<void> {
  await racer?.stop();
  racer = undefined;
}

/** Runs `script` in the work directory as the run user: what any process of the component could do. */
function asRunUser(script: string): void {
  execFileSync('setpriv', [...RUN_USER_SETPRIV, '/bin/sh', '-c', script], { cwd: work, stdio: 'inherit' });
}

/** A staged tree as process-runtime builds it: in a root-only directory next to the work directory, given to the run user. */
async function stage(files: Record<string, string>): Promise<string> {
  const dir = mkdtempSync(join(componentDir, '.stage-'));
  const tree = join(dir, 'tree');
  for (const [rel, data] of Object.entries(files)) {
    mkdirSync(join(tree, rel, '..'), { recursive: true, mode: 0o755 });
    if (rel.endsWith('/')) mkdirSync(join(tree, rel), { recursive: true, mode: 0o755 });
    else writeFileSync(join(tree, rel), data, { mode: 0o644 });
  }
  await chownTree(tree, RUN.uid, RUN.gid);
  return tree;
}

/** A seam that lets the run user swap `rel` (a directory it owns) for a link to the root-only directory, once. */
function swapForLinkAfterCheck(rel: string): MergeTreeSeam {
  let done = false;
  return {
    afterCheck: (r) => {
      if (r !== rel || done) return;
      done = true;
      asRunUser(`mv '${rel}' '${rel}.moved' && ln -s '${outside}' '${rel}'`);
    },
  };
}

describe.skipIf(root.skip)(root.title('mergeTree into a work directory the run user can write'), () => {
  it('a directory swapped for a link after it was checked does not redirect the files moved into it', async () => {
    asRunUser('mkdir conf && echo mine > conf/local.txt');
    const tree = await stage({ 'conf/app.conf': 'new', 'conf/plugins/one.so': 'one' });
    await mergeTree(tree, work, swapForLinkAfterCheck('conf'));
    expect(snapshot(outside)).toEqual(outsideBefore);
    // The files went into the directory that was checked, wherever its owner moved it.
    expect(readFileSync(join(work, 'conf.moved/app.conf'), 'utf8')).toBe('new');
    expect(readFileSync(join(work, 'conf.moved/plugins/one.so'), 'utf8')).toBe('one');
    expect(readFileSync(join(work, 'conf.moved/local.txt'), 'utf8')).toBe('mine\n');
  });

  it('a directory swapped for a link does not make the agent remove what the link points to', async () => {
    // The artifact now has a file where the work directory has a directory: the directory is removed first.
    asRunUser('mkdir -p conf/ssl && echo mine > conf/ssl/cert');
    const tree = await stage({ 'conf/ssl': 'now a file' });
    await mergeTree(tree, work, swapForLinkAfterCheck('conf'));
    expect(snapshot(outside)).toEqual(outsideBefore);
    expect(readFileSync(join(work, 'conf.moved/ssl'), 'utf8')).toBe('now a file');
  });

  it('a subdirectory swapped for a link while its tree is being removed is unlinked, not descended into', async () => {
    // The removal opens each directory it empties and works through that descriptor, so a swap after the
    // open (here, on cue) leaves it emptying the directory it opened. fs.rm has no such moment to test on
    // cue; the racing test below shows it following a swap.
    asRunUser('mkdir -p data/sub && echo mine > data/sub/x');
    const tree = await stage({ data: 'now a file' });
    // The user's moved directory is left (emptied) in `data`, so the merge fails: that is only its own loss.
    await expect(mergeTree(tree, work, swapForLinkAfterCheck('data/sub'))).rejects.toThrow(/ENOTEMPTY/);
    expect(snapshot(outside)).toEqual(outsideBefore);
    expect(readdirSync(join(work, 'data'))).toEqual(['sub.moved']);
    expect(readdirSync(join(work, 'data/sub.moved'))).toEqual([]);
  });

  it('a directory tree of the run user too deep to remove with bounded descriptors is refused, and left', async () => {
    asRunUser(`p=deep; for i in $(seq ${MAX_REMOVE_DEPTH + 5}); do p="$p/d"; done; mkdir -p "$p" && touch "$p/leaf"`);
    const tree = await stage({ deep: 'now a file' });
    const err = await mergeTree(tree, work).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isArtifactError(err, 'KS_ARTIFACT_INSTALL_UNSAFE'), String(err)).toBe(true);
    expect(lstatSync(join(work, 'deep')).isDirectory()).toBe(true);
  });

  it('a link in place of the work directory itself is refused, not written through', async () => {
    const link = join(componentDir, 'linked');
    execFileSync('ln', ['-s', outside, link]);
    const tree = await stage({ 'secret': 'replaced', 'ssl/key': 'replaced' });
    const err = await mergeTree(tree, link).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isArtifactError(err, 'KS_ARTIFACT_INSTALL_UNSAFE'), String(err)).toBe(true);
    expect(snapshot(outside)).toEqual(outsideBefore);
  });

  // The real race, bounded by a number of merges: a process of the run user loops rename/symlink swaps of the
  // directories the merge goes into or removes, as fast as it can, for as long as the merges run.
  it('a process of the run user swapping directories for links while the agent merges into them never redirects a file outside', async () => {
    await raceMerges(['conf', 'conf/sub'], 250, (i) => ({ 'conf/app.conf': `v${i}`, 'conf/sub/one.so': `v${i}`, [`conf/sub/f${i}`]: 'x' }));
  }, 120_000);

  it('a process of the run user swapping subdirectories for links while the agent removes their tree never removes anything outside', async () => {
    // A tree of directories, then a file in its place: the tree is removed while the racer swaps its
    // subdirectories (fs.rm's recursive walk follows such a swap). A new tree only comes when the last one is
    // gone, so no merge ever goes into one of them: only the removal is raced.
    await raceMerges(['data/d0', 'data/d1', 'data/d2', 'data/d3'], 400, (i) => {
      if (lstatSync(join(work, 'data'), { throwIfNoEntry: false })?.isDirectory()) return { data: `v${i}` };
      const files: Record<string, string> = {};
      for (let k = 0; k < 4; k++) for (const f of ['a', 'b', 'c', 'd']) files[`data/d${k}/${f}`] = `v${i}`;
      return files;
    });
  }, 120_000);
});

/** Merges `count` staged trees (`files(i)`) while the run user swaps each of `swapped` for a link to the root-only directory. */
async function raceMerges(swapped: string[], count: number, files: (i: number) => Record<string, string>): Promise<void> {
  const r = (racer = await startRacer(work, outside, swapped));
  let merged = 0;
  for (let i = 0; i < count; i++) {
    const tree = await stage(files(i));
    // The racer may make a merge fail (a directory gone for a moment): that is its own loss; what matters is
    // that nothing outside is touched.
    merged += await mergeTree(tree, work).then(
      () => 1,
      () => 0,
    );
    expect(snapshot(outside), `after merge ${i}`).toEqual(outsideBefore);
  }
  expect(r.running(), 'the racer ran throughout').toBe(true);
  expect(merged).toBeGreaterThan(0);
}
