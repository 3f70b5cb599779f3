// Reads repository files straight from a commit's tree with isomorphic-git: no checkout, no working copy. A file's
// size is read from its object's header first (git-object-size.ts): one over the caller's limit is refused without
// being inflated, so a huge blob in a commit (a pack bomb's 1 GiB of zeros) is never held in memory by reading it.
import fs from 'node:fs';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { OperationError } from '../core/errors.js';
import { escapesRepository } from '../core/recipe.js';
import { GitObjectSizes } from '../git/git-object-size.js';
import type { ReadResult, RepoReader } from './repo-reader.js';

interface TreeEntry {
  mode: string;
  path: string;
  oid: string;
  type: string;
}

export interface GitLocation {
  /** The working directory, for a non-bare repository. */
  dir?: string;
  /** The .git directory (or a bare repository). */
  gitdir: string;
}

/** Finds the git directory of `path`: `path/.git` for a working tree, `path` itself when bare. */
export function locateGitRepository(path: string): GitLocation {
  const dotGit = join(path, '.git');
  if (fs.existsSync(dotGit)) return { dir: path, gitdir: dotGit };
  if (fs.existsSync(join(path, 'HEAD')) && fs.existsSync(join(path, 'objects'))) return { gitdir: path };
  throw new OperationError('KS_NOT_A_GIT_REPOSITORY', `${path} is not a Git repository`);
}

/** Resolves a branch, tag, remote branch, full ref, HEAD or (abbreviated) commit id to a commit id. */
export async function resolveCommit(loc: GitLocation, ref: string): Promise<string> {
  const { gitdir } = loc;
  try {
    const full = await git.expandRef({ fs, gitdir, ref });
    return await git.resolveRef({ fs, gitdir, ref: full });
  } catch {
    /* not a ref name: maybe a commit id */
  }
  if (/^[0-9a-f]{4,40}$/i.test(ref)) {
    try {
      return await git.expandOid({ fs, gitdir, oid: ref.toLowerCase() });
    } catch {
      /* fall through to the error below */
    }
  }
  throw new OperationError('KS_GIT_REF_NOT_FOUND', `no ref or commit "${ref}" in ${loc.dir ?? gitdir}`);
}

export class GitTreeReader implements RepoReader {
  readonly label: string;
  /** Each tree read, by entry name: a devices/ of 100,000 certificates is looked up hundreds of times a gate read. */
  private trees = new Map<string, Promise<Map<string, TreeEntry>>>();
  private readonly sizes: GitObjectSizes;

  constructor(
    private readonly loc: GitLocation,
    readonly commit: string,
    ref: string,
  ) {
    this.label = `git ${ref} (${commit.slice(0, 7)})`;
    this.sizes = new GitObjectSizes(loc.gitdir);
  }

  static async open(repoPath: string, ref: string): Promise<GitTreeReader> {
    const loc = locateGitRepository(repoPath);
    return new GitTreeReader(loc, await resolveCommit(loc, ref), ref);
  }

  private tree(oid: string, cache?: object): Promise<Map<string, TreeEntry>> {
    let t = this.trees.get(oid);
    if (!t) {
      t = git
        .readTree({ fs, gitdir: this.loc.gitdir, oid, ...(cache && { cache }) })
        .then((r) => firstByName(r.tree as TreeEntry[]));
      this.trees.set(oid, t);
    }
    return t;
  }

  async readFile(path: string, maxBytes: number, o: { cache?: object } = {}): Promise<ReadResult> {
    if (escapesRepository(path))
      return { ok: false, code: 'KS_PATH_ESCAPE', message: `${path} points outside the repository` };
    const parts = path.split('/').filter((p) => p !== '' && p !== '.');
    try {
      let oid = this.commit;
      for (let i = 0; i < parts.length; i++) {
        const entry = (await this.tree(oid, o.cache)).get(parts[i]!);
        if (!entry) return { ok: false, code: 'KS_FILE_NOT_FOUND', message: `${path} does not exist at ${this.label}` };
        const last = i === parts.length - 1;
        if (last) {
          // A symlink blob holds a link target, not a recipe: refuse rather than follow it anywhere.
          if (entry.type !== 'blob' || entry.mode === '120000')
            return { ok: false, code: 'KS_NOT_A_FILE', message: `${path} is not a regular file at ${this.label}` };
          const size = await this.sizes.sizeOf(entry.oid);
          if (size !== undefined && size > maxBytes)
            return {
              ok: false,
              code: 'KS_FILE_TOO_LARGE',
              message: `${path} is ${size} bytes, over the limit of ${maxBytes}`,
            };
          const { blob } = await git.readBlob({
            fs,
            gitdir: this.loc.gitdir,
            oid: entry.oid,
            ...(o.cache && { cache: o.cache }),
          });
          if (blob.length > maxBytes)
            return {
              ok: false,
              code: 'KS_FILE_TOO_LARGE',
              message: `${path} is ${blob.length} bytes, over the limit of ${maxBytes}`,
            };
          return { ok: true, bytes: blob };
        }
        if (entry.type !== 'tree')
          return {
            ok: false,
            code: 'KS_NOT_A_FILE',
            message: `${parts.slice(0, i + 1).join('/')} is not a directory at ${this.label}`,
          };
        oid = entry.oid;
      }
      return { ok: false, code: 'KS_NOT_A_FILE', message: `${path} is not a file` };
    } catch (e) {
      throw new OperationError('KS_GIT_READ_FAILED', `cannot read ${path} at ${this.label}: ${(e as Error).message}`);
    }
  }
}

/** A tree's entries by name, the first of a name winning (a tree that repeats one is malformed; git reads the first). */
function firstByName(entries: readonly TreeEntry[]): Map<string, TreeEntry> {
  const byName = new Map<string, TreeEntry>();
  for (const e of entries) if (!byName.has(e.path)) byName.set(e.path, e);
  return byName;
}
