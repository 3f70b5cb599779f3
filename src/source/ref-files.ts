// A local repository's refs as Git's files backend keeps them: the common git directory, loose ref files and
// packed-refs, and a symbolic ref followed to its oid. Apart from ref-lister.ts, which keeps the listers; the local
// one (LocalRefLister) decides the order these are read in.
import fs from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { OperationError } from '../core/errors.js';
import { isValidRefName } from '../git/ls-refs-answer.js';
import { locateGitRepository } from './git-tree-reader.js';

/** The directory all of a repository's shared refs are under: the git directory, or a linked work tree's common one. */
export function commonGitDir(path: string): string {
  let gitdir = locateGitRepository(path).gitdir;
  // A linked work tree or submodule: `.git` is a file naming the git directory.
  if (fs.statSync(gitdir).isFile()) {
    const m = /^gitdir: (.+)$/m.exec(fs.readFileSync(gitdir, 'utf8'));
    if (!m)
      throw new OperationError('KS_NOT_A_GIT_REPOSITORY', `${gitdir} is neither a git directory nor a gitdir: file`);
    gitdir = resolve(path, m[1]!.trim());
  }
  const commondir = join(gitdir, 'commondir');
  return fs.existsSync(commondir) ? resolve(gitdir, fs.readFileSync(commondir, 'utf8').trim()) : gitdir;
}

/** The directory of loose refs a prefix's refs are in: `refs/heads` for `refs/heads/ma`; `refs/a/` is `refs/a`. */
export function looseDirOf(prefix: string): string {
  const cut = prefix.lastIndexOf('/');
  return cut < 0 ? '' : prefix.slice(0, cut);
}

/** Every loose ref file under `<gitdir>/<dir>` (recursively), as name → content. Lock files and the like are skipped. */
export async function readLooseRefs(gitdir: string, dir: string, into: Map<string, string>): Promise<void> {
  // A prefix is a ref name's start: it never climbs out of the git directory, but a `..` in it is refused anyway.
  if (dir.split('/').some((c) => c === '..' || c === '.')) return;
  let entries: fs.Dirent[];
  try {
    entries = await readdir(join(gitdir, dir), { withFileTypes: true });
  } catch {
    return; // no such directory (or a file, which no ref under the prefix can be): nothing loose under it
  }
  for (const e of entries) {
    const name = dir === '' ? e.name : `${dir}/${e.name}`;
    if (dir === '' && e.name !== 'refs') continue; // the top level holds HEAD, config, objects…: only refs/ is listed
    if (e.isDirectory()) await readLooseRefs(gitdir, name, into);
    else if (e.isFile() && isValidRefName(name)) await readLooseRef(gitdir, name, into);
  }
}

export async function readLooseRef(gitdir: string, name: string, into: Map<string, string>): Promise<void> {
  try {
    into.set(name, (await readFile(join(gitdir, name), 'utf8')).trim());
  } catch {
    // Deleted since the directory was read (or being packed: packed-refs, read after, has it).
  }
}

/** packed-refs as name → oid; `^<oid>` lines (a tag's peeled object) and the header are skipped. */
export async function readPackedRefs(gitdir: string): Promise<Map<string, string>> {
  const packed = new Map<string, string>();
  let text: string;
  try {
    text = await readFile(join(gitdir, 'packed-refs'), 'utf8');
  } catch {
    return packed;
  }
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#') || line.startsWith('^')) continue;
    const m = /^([0-9a-f]{40}) (\S+)$/.exec(line);
    if (!m)
      throw new OperationError(
        'KS_GIT_READ_FAILED',
        `${join(gitdir, 'packed-refs')} has a line that is not a packed ref`,
      );
    packed.set(m[2]!, m[1]!);
  }
  return packed;
}

/** The oid a ref names, following symbolic refs (`ref: refs/…`) a few levels; '' when it leads nowhere. */
export async function resolveRef(
  ref: string,
  loose: Map<string, string>,
  packed: Map<string, string>,
  gitdir: string,
): Promise<string> {
  let name = ref;
  for (let depth = 0; depth < 5; depth++) {
    let content = loose.get(name);
    // A symbolic ref's target may lie outside the prefixes read: read it on its own.
    if (content === undefined && name !== ref && isValidRefName(name)) {
      const one = new Map<string, string>();
      await readLooseRef(gitdir, name, one);
      content = one.get(name);
    }
    content ??= packed.get(name);
    if (content === undefined) return '';
    if (/^[0-9a-f]{40}$/.test(content)) return content;
    const m = /^ref: (\S+)$/.exec(content);
    if (!m || !m[1]!.startsWith('refs/')) return '';
    name = m[1]!;
  }
  return '';
}
