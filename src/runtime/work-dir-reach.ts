// Can a run user reach its work directory? Every directory above it must let that user search it (x), or the program
// cannot even be found (`npm start` from a checkout in /root, mode 0700: "Cannot find module").
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';

/** The first directory above `workDir` (from `/` down) that `who` may not search; undefined when none blocks. */
export async function blockingAncestor(
  workDir: string,
  who: { uid: number; gids: readonly number[] },
): Promise<{ dir: string; mode: number; uid: number } | undefined> {
  if (who.uid === 0) return undefined;
  const dirs: string[] = [];
  for (let d = dirname(workDir); ; d = dirname(d)) {
    dirs.unshift(d);
    if (d === dirname(d)) break;
  }
  for (const dir of dirs) {
    let st;
    try {
      st = await stat(dir);
    } catch {
      // Not there yet: the agent creates it, searchable by everyone (0711/0755).
      return undefined;
    }
    const bit = st.uid === who.uid ? 0o100 : who.gids.includes(st.gid) ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) return { dir, mode: st.mode & 0o7777, uid: st.uid };
  }
  return undefined;
}
