// /etc/passwd and /etc/group parsed directly: names resolve to ids without a shell, `id` or NSS tools.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** One line of /etc/passwd. */
export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
  shell: string;
}

/** One line of /etc/group. */
export interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

/** Both databases, read once per install or start. */
export interface UserDb {
  passwd: PasswdEntry[];
  groups: GroupEntry[];
}

const isId = (s: string | undefined): s is string => s !== undefined && /^\d+$/.test(s);

/** Parses passwd(5) text; comments, blank, NIS (`+`/`-`) and malformed lines are skipped. */
export function parsePasswd(text: string): PasswdEntry[] {
  const out: PasswdEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#') || line.startsWith('+') || line.startsWith('-')) continue;
    const f = line.split(':');
    if (f.length < 7 || !f[0] || !isId(f[2]) || !isId(f[3])) continue;
    out.push({ name: f[0], uid: Number(f[2]), gid: Number(f[3]), home: f[5] ?? '', shell: f[6] ?? '' });
  }
  return out;
}

/** Parses group(5) text; comments, blank, NIS and malformed lines are skipped. */
export function parseGroup(text: string): GroupEntry[] {
  const out: GroupEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#') || line.startsWith('+') || line.startsWith('-')) continue;
    const f = line.split(':');
    if (f.length < 4 || !f[0] || !isId(f[2])) continue;
    out.push({ name: f[0], gid: Number(f[2]), members: (f[3] ?? '').split(',').filter((m) => m !== '') });
  }
  return out;
}

/** Reads both databases (paths injectable for tests); a missing file reads as empty. */
export async function readUserDb(paths: { passwd?: string; group?: string } = {}): Promise<UserDb> {
  const read = async (p: string) => {
    try {
      return await readFile(p, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
      throw e;
    }
  };
  const [passwd, group] = await Promise.all([read(paths.passwd ?? '/etc/passwd'), read(paths.group ?? '/etc/group')]);
  return { passwd: parsePasswd(passwd), groups: parseGroup(group) };
}

/** readUserDb for a synchronous check (the device policy's); a missing file reads as empty. */
export function readUserDbSync(paths: { passwd?: string; group?: string } = {}): UserDb {
  const read = (p: string) => {
    try {
      return readFileSync(p, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
      throw e;
    }
  };
  return {
    passwd: parsePasswd(read(paths.passwd ?? '/etc/passwd')),
    groups: parseGroup(read(paths.group ?? '/etc/group')),
  };
}

/** A user by name, or by numeric uid when `spec` is all digits and no user has that name. */
export function findUser(db: UserDb, spec: string): PasswdEntry | undefined {
  return (
    db.passwd.find((u) => u.name === spec) ?? (isId(spec) ? db.passwd.find((u) => u.uid === Number(spec)) : undefined)
  );
}

/** A group by name, or by numeric gid when `spec` is all digits and no group has that name. */
export function findGroup(db: UserDb, spec: string): GroupEntry | undefined {
  return (
    db.groups.find((g) => g.name === spec) ?? (isId(spec) ? db.groups.find((g) => g.gid === Number(spec)) : undefined)
  );
}

/** The supplementary groups initgroups(3) would give `user`, plus `primaryGid`. */
export function groupsOf(db: UserDb, user: string | undefined, primaryGid: number): number[] {
  const gids = new Set<number>([primaryGid]);
  if (user !== undefined) for (const g of db.groups) if (g.members.includes(user)) gids.add(g.gid);
  return [...gids];
}
