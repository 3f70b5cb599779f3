// `./.state`, the state directory of the agent `npm start` runs in a checkout, as keystonectl may use it without
// --state-dir: only when it is what that agent makes (a directory of this user's that others cannot read or write (the agent's is 0711), not a link, with a token
// file of this user's, mode 0600, one link). A directory someone else prepared — a cloned repository, an unpacked
// archive — could otherwise hold `.state/api-token` as a link to any file this user can read, and keystonectl would
// send that file as its bearer token, or show logs that are not the device's (the review of issue 34).
import { lstatSync } from 'node:fs';
import { join, resolve } from 'node:path';
import process from 'node:process';

export const CHECKOUT_STATE_DIR = '.state';

/** The checkout's state directory when keystonectl may trust it, else why not (for the message that lists where it looked). */
export function checkoutStateDir(
  cwd: string,
  tokenFile: string,
  uid: number | undefined = process.geteuid?.(),
): { dir: string } | { dir: string; why: string } {
  const dir = resolve(cwd, CHECKOUT_STATE_DIR);
  const own = (path: string, kind: 'directory' | 'file'): string | undefined => {
    let st;
    try {
      st = lstatSync(path);
    } catch (e) {
      return (e as NodeJS.ErrnoException).code ?? 'unreadable';
    }
    if (st.isSymbolicLink()) return 'a symbolic link, not used';
    if (kind === 'directory' ? !st.isDirectory() : !st.isFile()) return `not a ${kind}, not used`;
    if (uid !== undefined && st.uid !== uid) return `owned by uid ${st.uid}, not this user's, not used`;
    // The agent makes its state directory 0711 (its components' run users pass through it) and its token 0600.
    if ((st.mode & (kind === 'directory' ? 0o066 : 0o077)) !== 0)
      return `mode ${(st.mode & 0o777).toString(8)}, not the agent's ${kind === 'directory' ? '0711' : '0600'}, not used`;
    if (kind === 'file' && st.nlink !== 1) return 'a file with other links, not used';
    return undefined;
  };
  const why = own(dir, 'directory') ?? own(join(dir, tokenFile), 'file');
  return why === undefined ? { dir } : { dir, why };
}

/** An agent address on this machine: the only one a checkout's token is sent to. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}
