// The files a setting names (token and secret files, public keys, the certificate), read to check them: there, a file,
// small, and what they should hold. Shared by the agent's rules (agent-config-rules.ts), in either voice (config-at.ts).
import { readFileSync, statSync, type Stats } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { MAX_CERTIFICATE_FILE_BYTES } from '../agent/run-settings.js';
import { CODES } from '../core/errors.js';
import { parsePublicKey } from '../trust/minisign.js';
import { CONFIG_CODES } from './agent-config-error.js';
import type { At, Check, FlagWords } from './config-at.js';

/** Secret and key files are a line or a few; a bigger one was named by mistake. */
const MAX_NAMED_FILE_BYTES = 64 * 1024;
const ELSEWHERE = "relative paths are taken from the configuration file's directory";

/** A token's look, for a `…-file` key that names no file: said without repeating the value, which may be the secret. */
function looksLikeToken(text: string): boolean {
  if (/^(gh[pousr]_|github_pat_|glpat-|xox[abpr]-)/.test(text)) return true;
  return text.length >= 20 && /^[A-Za-z0-9_+=-]+$/.test(text) && /[0-9]/.test(text) && /[A-Za-z]/.test(text);
}

/** A minisign public key written where its file's name should be (`RW…`, 56 characters, or the whole file's text). */
const looksLikeInlineKey = (text: string) =>
  /^RW[A-Za-z0-9+/]{54}$/.test(text.trim()) || text.includes('\n') || text.startsWith('untrusted comment:');

/**
 * What a flag said when its file could not be had: `reason` is the errno code, `not a file`, or the size of one too
 * large. Undefined: the file's message, after the flag.
 */
type ReadWords = (file: string, reason: string, detail: string) => FlagWords;

/** The text of a file the configuration names, or undefined after reporting why it cannot be had. */
function readNamed(
  text: string,
  at: At,
  what: string,
  inline: (t: string) => boolean,
  inlineHint: string,
  words: ReadWords = () => undefined,
): string | undefined {
  const file = resolve(at.dir, text);
  const relative = isAbsolute(text) || at.flag !== undefined ? '' : ` (${ELSEWHERE}, ${at.dir})`;
  const said = (reason: string, detail = reason) => (at.flag === undefined ? undefined : words(file, reason, detail));
  // A flag's problem throws: each is reported outside the try that finds it.
  let st: Stats;
  try {
    st = statSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const detail = (e as Error).message;
    if (code !== 'ENOENT' && code !== 'ENOTDIR')
      return at.problem(
        CONFIG_CODES.FILE_UNREADABLE,
        `the ${what} ${file} cannot be read (${code ?? detail})`,
        undefined,
        said(code ?? detail, detail),
      );
    if (inline(text))
      return at.problem(
        CONFIG_CODES.SECRET_INLINE,
        `names no file and looks like the ${what}'s content itself: it never goes in the configuration`,
        inlineHint,
        said(code, detail),
      );
    return at.problem(
      CODES.FILE_NOT_FOUND,
      `the ${what} ${file} does not exist${relative}`,
      undefined,
      said(code, detail),
    );
  }
  if (!st.isFile())
    return at.problem(
      CODES.NOT_A_FILE,
      `the ${what} ${file} is not a file${relative}`,
      undefined,
      said(st.isDirectory() ? 'EISDIR' : 'not a file'),
    );
  if (st.size > MAX_NAMED_FILE_BYTES)
    return at.problem(
      CODES.FILE_TOO_LARGE,
      `the ${what} ${file} is ${st.size} bytes, more than a ${what} can be (${MAX_NAMED_FILE_BYTES})`,
      undefined,
      said(String(st.size)),
    );
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    return at.problem(
      CONFIG_CODES.FILE_UNREADABLE,
      `the ${what} ${file} cannot be read (${code})`,
      undefined,
      said(code, (e as Error).message),
    );
  }
  return content;
}

/** `git-token-file` and its kind: a readable file whose first line is the secret (as the agent reads it). */
export const secretFile =
  (what: string): Check =>
  (text, at) => {
    const cannot = (file: string, reason: string) => `cannot read the ${what} file ${file}: ${reason}`;
    const content = readNamed(
      text,
      at,
      `${what} file`,
      looksLikeToken,
      `put the ${what} in a file only root can read (chmod 600) and name that file here`,
      cannot,
    );
    if (content === undefined) return undefined;
    const file = resolve(at.dir, text);
    if (!content.split('\n', 1)[0]!.trim())
      return at.problem(
        CODES.INVALID_VALUE,
        `the ${what} file ${file} is empty`,
        `the ${what} is its first line`,
        `the ${what} file ${file} is empty`,
      );
    return file;
  };

/** A minisign public key the device trusts, named by its file: `trusted-key` (releases), `enrollment-key` (certificates). */
export const publicKeyFile =
  (
    what: string,
    example: string,
    words: {
      cannot(file: string, text: string, reason: string, detail: string): FlagWords;
      malformed(file: string, text: string, e: Error & { code?: string }): FlagWords;
    },
  ): Check =>
  (text, at) => {
    const hint = `name the public key file, e.g. ${example} (keystonectl keygen or minisign -G writes one)`;
    if (looksLikeInlineKey(text))
      return at.problem(
        CONFIG_CODES.SECRET_INLINE,
        `a ${what} is named by its file, never written in the configuration`,
        hint,
      );
    const content = readNamed(
      text,
      at,
      what,
      () => false,
      hint,
      (file, reason, detail) => words.cannot(file, text, reason, detail),
    );
    if (content === undefined) return undefined;
    const file = resolve(at.dir, text);
    try {
      parsePublicKey(content);
    } catch (e) {
      const code =
        (e as { code?: string }).code === CONFIG_CODES.WEAK_KEY ? CONFIG_CODES.WEAK_KEY : CONFIG_CODES.KEY_MALFORMED;
      return at.problem(
        code,
        `the ${what} ${file} is not a minisign public key: ${(e as Error).message}`,
        undefined,
        at.flag && words.malformed(file, text, e as Error),
      );
    }
    return file;
  };

/** A certificate (`keystonectl enroll`) is verified where it is used, against the enrolment keys and the clock: here, read. */
export const certificateFile: Check = (text, at) => {
  const tooLarge = (file: string, size: number | string) =>
    `--certificate ${file} is ${size} bytes, more than a certificate can be (${MAX_CERTIFICATE_FILE_BYTES})`;
  const cannot: ReadWords = (file, reason) =>
    reason === 'EISDIR' || reason === 'not a file'
      ? `--certificate ${file} is not a file`
      : /^[0-9]+$/.test(reason)
        ? tooLarge(file, reason)
        : `cannot read the certificate ${file}: ${reason}`;
  const content = readNamed(
    text,
    at,
    'certificate',
    () => false,
    'name the file keystonectl enroll wrote for this device, e.g. "/etc/keystone/device.cert"',
    cannot,
  );
  if (content === undefined) return undefined;
  const size = Buffer.byteLength(content);
  const file = resolve(at.dir, text);
  if (size > MAX_CERTIFICATE_FILE_BYTES)
    return at.problem(
      CODES.FILE_TOO_LARGE,
      `the certificate ${file} is ${size} bytes, more than a certificate can be (${MAX_CERTIFICATE_FILE_BYTES})`,
      undefined,
      tooLarge(file, size),
    );
  return file;
};
