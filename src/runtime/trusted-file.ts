// The files the (root) agent trusts without making them: its configuration file (the device policy), the trusted keys,
// and the secrets it is given by file (Git tokens, the webhook secret). Checked as sshd's StrictModes checks its
// own: the file and every directory the kernel passes through to reach it, links followed, owned by root or the
// agent's user and writable by no one else, not even a group (issue 28, finding 6). A secret is, besides, readable by
// no one else. Whoever could change one of these files decides what the agent allows, or whom it trusts.
//
// A sticky directory writable by everyone (/tmp) is accepted on the way, unlike sshd: in it, no other user can rename,
// remove or replace an entry that is not theirs, and the entry's own owner is checked next (changeableByOthers).
import { lstatSync, readlinkSync, type Stats } from 'node:fs';
import { isAbsolute, join, resolve, sep } from 'node:path';
import { CodedError } from '../core/errors.js';
import { agentUid, changeableByOthers, chownSpec, describeUid } from '../state-dir/safe-path.js';

/** What the agent does with a file decides the rule: a secret must also stay unread by others. */
export type TrustedFileRole = 'config' | 'trusted-key' | 'secret';

export interface TrustedFileRef {
  path: string;
  role: TrustedFileRole;
  /** How the file was named, for people: `--trusted-key`, `git-token-file`, `the API token`. */
  what: string;
}

/** A file (or a directory or link on the way to it) another user could change, or read for a secret. */
export interface TrustedFileProblem {
  file: string;
  role: TrustedFileRole;
  /** The path at fault: the file, a directory on the way, or a link. */
  at: string;
  problem: string;
  /** A command that fixes it (chmod, chown), for people. */
  fix: string;
  code: TrustedFileCode;
}

export type TrustedFileCode = 'KS_CONFIG_UNSAFE' | 'KS_TRUSTED_KEY_UNSAFE' | 'KS_SECRET_FILE_UNSAFE';

const CODE: Record<TrustedFileRole, TrustedFileCode> = {
  config: 'KS_CONFIG_UNSAFE',
  'trusted-key': 'KS_TRUSTED_KEY_UNSAFE',
  secret: 'KS_SECRET_FILE_UNSAFE',
};

/** A trusted key or the configuration another user could change: the agent does not start (exit code 2). */
export class TrustedFileError extends CodedError<TrustedFileCode, { problems: TrustedFileProblem[] }> {
  override readonly name = 'TrustedFileError';
}

/** More hops than this through links is a loop (the kernel's own limit is 40). */
const MAX_LINKS = 40;

const modeText = (st: Stats) => (st.mode & 0o7777).toString(8).padStart(4, '0');

/**
 * Why `file` cannot be trusted, or undefined when it can. A path that does not exist or cannot be looked at is not
 * judged here: reading it says so, with its own code.
 */
export function trustedFileProblem(ref: Omit<TrustedFileRef, 'what'>): TrustedFileProblem | undefined {
  try {
    return walk(ref);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES' || code === 'ELOOP') return undefined;
    throw e;
  }
}

/** Every problem of `refs`, in their order. */
export function trustedFileProblems(refs: readonly Omit<TrustedFileRef, 'what'>[]): TrustedFileProblem[] {
  return refs.map((r) => trustedFileProblem(r)).filter((p): p is TrustedFileProblem => p !== undefined);
}

/** `problem: fix`, the one line a refusal or a warning says. */
export const describeProblem = (p: TrustedFileProblem): string => `${p.problem}: ${p.fix}`;

function walk({ path: file, role }: Omit<TrustedFileRef, 'what'>): TrustedFileProblem | undefined {
  const me = describeUid(agentUid());
  const spec = chownSpec();
  const found = (at: string, problem: string, fix: string): TrustedFileProblem => ({
    file,
    role,
    at,
    problem,
    fix,
    code: CODE[role],
  });
  // The components still to resolve, from `/`; a link's target is put in front of what remains.
  const pending = resolve(file).split(sep).filter(Boolean);
  let at: string = sep;
  let links = 0;
  const dirProblem = (dir: string, st: Stats) => {
    const who = changeableByOthers(st, { strictGroup: true });
    if (who === 'owner')
      return found(
        dir,
        `${dir}, a directory on the way to ${file}, is owned by ${describeUid(st.uid)}, who could put another file in its place`,
        `chown ${spec} ${dir}, or keep the file in a directory only ${me} can change`,
      );
    if (who === 'writable')
      return found(
        dir,
        `${dir}, a directory on the way to ${file}, is writable by other users (mode ${modeText(st)}), who could put another file in its place`,
        `chmod go-w ${dir}`,
      );
    return undefined;
  };
  const root = dirProblem(sep, lstatSync(sep));
  if (root) return root;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '.') continue;
    // `at` is a real directory reached through checked steps only, so its parent is one of them.
    if (part === '..') {
      at = join(at, '..');
      continue;
    }
    const next = join(at, part);
    const st = lstatSync(next);
    if (st.isSymbolicLink()) {
      if (++links > MAX_LINKS) return undefined;
      // In a directory that passed, only root or the agent could have made the link; in a sticky one, its owner.
      if (st.uid !== 0 && st.uid !== agentUid())
        return found(
          next,
          `${next}, a symbolic link on the way to ${file}, is owned by ${describeUid(st.uid)}, who could point it elsewhere`,
          `chown -h ${spec} ${next}, or give the real path`,
        );
      const target = readlinkSync(next);
      if (isAbsolute(target)) at = sep;
      pending.unshift(...target.split(sep).filter(Boolean));
      continue;
    }
    if (pending.length > 0) {
      if (!st.isDirectory()) return undefined;
      const problem = dirProblem(next, st);
      if (problem) return problem;
      at = next;
      continue;
    }
    // The file itself; what is not a regular file is the reader's to refuse.
    if (!st.isFile()) return undefined;
    const who = changeableByOthers(st, { strictGroup: true });
    const name = next === resolve(file) ? file : `${file} (${next})`;
    if (who === 'owner')
      return found(next, `${name} is owned by ${describeUid(st.uid)}, who could change it`, `chown ${spec} ${next}`);
    if (who === 'writable')
      return found(next, `${name} is writable by other users (mode ${modeText(st)})`, `chmod go-w ${next}`);
    // A secret of root's that a non-root agent reads through a group is that group's too: the fix makes it the agent's.
    if (role === 'secret' && (st.mode & 0o044) !== 0)
      return found(
        next,
        `${name} is readable by other users (mode ${modeText(st)}), and so is the secret in it`,
        st.uid === agentUid() ? `chmod 600 ${next}` : `chown ${spec} ${next} && chmod 600 ${next}`,
      );
    return undefined;
  }
  return undefined;
}
