// One rule per key of the agent's configuration file: the type a key takes and the check its flag gets, told with the
// file, TOML path and line instead of the flag. Relative paths are taken from the configuration file's directory (the
// agent's working directory is an accident of how it was started; the file's place is not). A key the table misses
// does not compile: every flag of AGENT_OPTIONS has its rule.
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAX_CERTIFICATE_FILE_BYTES } from '../agent/run-settings.js';
import { parseListenAddress } from '../api/listen-address.js';
import { canonicalCapability, canonicalHostPath } from '../core/device-policy.js';
import { parseDuration } from '../core/duration.js';
import { parseWindowText } from '../core/maintenance-window.js';
import { CODES } from '../core/errors.js';
import { deviceNameProblem, LABEL_KEY_HINT, LABEL_VALUE_HINT, labelKeyProblem, labelValueProblem } from '../core/labels.js';
import { describe } from '../core/toml-document.js';
import type { TomlPath } from '../core/toml-locate.js';
import { parseGitRepo } from '../source/git-repo-location.js';
import { parsePublicKey } from '../trust/minisign.js';
import { CONFIG_CODES, type ConfigCode } from './agent-config-error.js';
import { socketProblem } from './engine-args.js';
import type { AgentOptionName } from './agent-options.js';

/** Where a value is, and how to report a problem with it (always returns undefined, so a check can `return at.problem(…)`). */
export interface At {
  path: TomlPath;
  /** The configuration file's directory. */
  dir: string;
  problem(code: ConfigCode, message: string, hint?: string): undefined;
}

export type ConfigValue = string | boolean | string[];

/** A key's rule: the value as the agent's flag would carry it (paths made absolute), or undefined after reporting. */
export type Rule = (raw: unknown, at: (index?: number) => At) => ConfigValue | undefined;

type Check = (text: string, at: At) => string | undefined;

/** Secret and key files are a line or a few; a bigger one was named by mistake. */
const MAX_NAMED_FILE_BYTES = 64 * 1024;
const DURATION_HINT = 'use Go style: "300ms", "10s", "2m0s", "1h30m"';
const ELSEWHERE = "relative paths are taken from the configuration file's directory";

const wrongType = (at: At, expected: string, raw: unknown, hint?: string) => at.problem(CODES.INVALID_TYPE, `expected ${expected}, got ${describe(raw)}`, hint);

function plainText(text: string, at: At): string | undefined {
  if (text === '') return at.problem(CODES.INVALID_VALUE, 'must not be empty', 'leave the key out for the default');
  if (/\p{Cc}/u.test(text)) return at.problem(CODES.INVALID_VALUE, 'must not contain control characters');
  return text;
}

/** A string key. */
const one =
  (check: Check = plainText, typeHint?: string): Rule =>
  (raw, at) =>
    typeof raw !== 'string' ? wrongType(at(), 'a string', raw, typeHint) : plainText(raw, at()) === undefined ? undefined : check(raw, at());

/** A repeatable flag's key: an array of strings (an empty array is the flag not given). */
const many =
  (check: Check = plainText): Rule =>
  (raw, at) => {
    if (!Array.isArray(raw)) {
      const key = String(at().path[0]);
      return wrongType(at(), 'an array of strings', raw, typeof raw === 'string' ? `write ${key} = [${JSON.stringify(raw)}]` : undefined);
    }
    const out: string[] = [];
    raw.forEach((item: unknown, i) => {
      const v = typeof item !== 'string' ? wrongType(at(i), 'a string', item) : plainText(item, at(i)) === undefined ? undefined : check(item, at(i));
      if (v !== undefined) out.push(v);
    });
    return out.length === raw.length ? out : undefined;
  };

const boolean: Rule = (raw, at) => (typeof raw === 'boolean' ? raw : wrongType(at(), 'a boolean (true or false)', raw));

/** `concurrency = 2` or `concurrency = "2"`: a whole number ≥ 1, carried as the flag's text. */
const wholeNumber: Rule = (raw, at) => {
  if (typeof raw !== 'number' && typeof raw !== 'string') return wrongType(at(), 'a whole number (2 or "2")', raw);
  const whole = typeof raw === 'number' ? Number.isSafeInteger(raw) : /^[0-9]{1,15}$/.test(raw);
  if (!whole) return at().problem(CODES.INVALID_VALUE, `${describe(raw)} is not a whole number`);
  if (Number(raw) < 1) return at().problem(CODES.INVALID_VALUE, `must be at least 1, got ${describe(raw)}`);
  return String(Number(raw));
};

const duration = (positive: boolean): Rule =>
  one((text, at) => {
    const ms = parseDuration(text);
    if (ms === undefined) return at.problem(CODES.BAD_DURATION, `"${text}" is not a duration`, DURATION_HINT);
    if (positive && ms <= 0) return at.problem(CODES.BAD_DURATION, `"${text}" must be more than zero`, DURATION_HINT);
    return text;
  }, 'durations are strings, e.g. "10s"');

const oneOf = (...choices: string[]): Rule =>
  one((text, at) => (choices.includes(text) ? text : at.problem(CODES.INVALID_VALUE, `"${text}" is not allowed`, `one of ${choices.map((c) => JSON.stringify(c)).join(', ')}`)));

const path: Check = (text, at) => resolve(at.dir, text);

/** A token's look, for a `…-file` key that names no file: said without repeating the value, which may be the secret. */
function looksLikeToken(text: string): boolean {
  if (/^(gh[pousr]_|github_pat_|glpat-|xox[abpr]-)/.test(text)) return true;
  return text.length >= 20 && /^[A-Za-z0-9_+=-]+$/.test(text) && /[0-9]/.test(text) && /[A-Za-z]/.test(text);
}

/** A minisign public key written where its file's name should be (`RW…`, 56 characters, or the whole file's text). */
const looksLikeInlineKey = (text: string) => /^RW[A-Za-z0-9+/]{54}$/.test(text.trim()) || text.includes('\n') || text.startsWith('untrusted comment:');

/** The text of a file the configuration names, or undefined after reporting why it cannot be had. */
function readNamed(text: string, at: At, what: string, inline: (t: string) => boolean, inlineHint: string): string | undefined {
  const file = resolve(at.dir, text);
  const relative = isAbsolute(text) ? '' : ` (${ELSEWHERE}, ${at.dir})`;
  let size: number;
  try {
    const st = statSync(file);
    if (!st.isFile()) return at.problem(CODES.NOT_A_FILE, `the ${what} ${file} is not a file${relative}`);
    size = st.size;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') return at.problem(CONFIG_CODES.FILE_UNREADABLE, `the ${what} ${file} cannot be read (${code ?? (e as Error).message})`);
    if (inline(text)) return at.problem(CONFIG_CODES.SECRET_INLINE, `names no file and looks like the ${what}'s content itself: it never goes in the configuration`, inlineHint);
    return at.problem(CODES.FILE_NOT_FOUND, `the ${what} ${file} does not exist${relative}`);
  }
  if (size > MAX_NAMED_FILE_BYTES) return at.problem(CODES.FILE_TOO_LARGE, `the ${what} ${file} is ${size} bytes, more than a ${what} can be (${MAX_NAMED_FILE_BYTES})`);
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    return at.problem(CONFIG_CODES.FILE_UNREADABLE, `the ${what} ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

/** `git-token-file` and its kind: a readable file whose first line is the secret (as the agent reads it). */
const secretFile = (what: string): Check => (text, at) => {
  const content = readNamed(text, at, `${what} file`, looksLikeToken, `put the ${what} in a file only root can read (chmod 600) and name that file here`);
  if (content === undefined) return undefined;
  if (!content.split('\n', 1)[0]!.trim()) return at.problem(CODES.INVALID_VALUE, `the ${what} file ${resolve(at.dir, text)} is empty`, `the ${what} is its first line`);
  return resolve(at.dir, text);
};

/** A minisign public key the device trusts, named by its file: `trusted-key` (releases), `enrollment-key` (certificates). */
const publicKeyFile =
  (what: string, example: string): Check =>
  (text, at) => {
    const hint = `name the public key file, e.g. ${example} (keystonectl keygen or minisign -G writes one)`;
    if (looksLikeInlineKey(text)) return at.problem(CONFIG_CODES.SECRET_INLINE, `a ${what} is named by its file, never written in the configuration`, hint);
    const content = readNamed(text, at, what, () => false, hint);
    if (content === undefined) return undefined;
    try {
      parsePublicKey(content);
    } catch (e) {
      const code = (e as { code?: string }).code === CONFIG_CODES.WEAK_KEY ? CONFIG_CODES.WEAK_KEY : CONFIG_CODES.KEY_MALFORMED;
      return at.problem(code, `the ${what} ${resolve(at.dir, text)} is not a minisign public key: ${(e as Error).message}`);
    }
    return resolve(at.dir, text);
  };

/** A certificate (`keystonectl enroll`) is verified where it is used, against the enrolment keys and the clock: here, read. */
const certificateFile: Check = (text, at) => {
  const content = readNamed(text, at, 'certificate', () => false, 'name the file keystonectl enroll wrote for this device, e.g. "/etc/keystone/device.cert"');
  if (content === undefined) return undefined;
  const size = Buffer.byteLength(content);
  if (size > MAX_CERTIFICATE_FILE_BYTES) return at.problem(CODES.FILE_TOO_LARGE, `the certificate ${resolve(at.dir, text)} is ${size} bytes, more than a certificate can be (${MAX_CERTIFICATE_FILE_BYTES})`);
  return resolve(at.dir, text);
};

/** `repo` and `status-repo`: an http(s) URL as it is, a `file://` URL or a path made absolute from the file's directory. */
const gitLocation: Check = (text, at) => {
  try {
    const loc = parseGitRepo(text);
    if (loc.kind === 'http') return text;
  } catch (e) {
    if ((e as { code?: string }).code === 'KS_GIT_CREDENTIALS_IN_URL')
      return at.problem(CONFIG_CODES.SECRET_INLINE, 'the URL carries credentials, which never go in the configuration', 'put the token in a file (chmod 600) and name it with git-token-file');
    return at.problem(CODES.INVALID_VALUE, (e as Error).message);
  }
  return /^file:\/\//i.test(text) ? fileURLToPath(text) : resolve(at.dir, text);
};

const httpUrl: Check = (text, at) => {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return at.problem(CODES.INVALID_VALUE, `"${text}" is not a URL`, 'e.g. "https://api.github.com"');
  }
  if (url.username || url.password) return at.problem(CONFIG_CODES.SECRET_INLINE, 'the URL carries credentials, which never go in the configuration', 'name a token file with github-token-file');
  return url.protocol === 'http:' || url.protocol === 'https:' ? text : at.problem(CODES.INVALID_VALUE, `unsupported URL scheme ${url.protocol}`, 'http or https');
};

const label: Check = (text, at) => {
  const eq = text.indexOf('=');
  if (eq < 0) return at.problem(CODES.BAD_LABEL, `${JSON.stringify(text)} is not KEY=VALUE`, 'e.g. "role=gateway"');
  const keyProblem = labelKeyProblem(text.slice(0, eq));
  const problem = keyProblem ?? labelValueProblem(text.slice(eq + 1));
  return problem ? at.problem(CODES.BAD_LABEL, problem, keyProblem ? LABEL_KEY_HINT : LABEL_VALUE_HINT) : text;
};

/** Labels, and one key given twice with two values (a mistake, not a choice: as with --label). */
const labels: Rule = (raw, at) => {
  const list = many(label)(raw, at) as string[] | undefined;
  if (!list) return undefined;
  const seen = new Map<string, string>();
  for (const [i, text] of list.entries()) {
    const key = text.slice(0, text.indexOf('='));
    const before = seen.get(key);
    if (before !== undefined && before !== text) return at(i).problem(CODES.BAD_LABEL, `the label ${key} is given twice, as ${JSON.stringify(before)} and ${JSON.stringify(text)}`);
    seen.set(key, text);
  }
  return list;
};

const device: Check = (text, at) => {
  const problem = deviceNameProblem(text);
  return problem ? at.problem(CODES.BAD_NAME, problem) : text;
};

const listen: Check = (text, at) => {
  try {
    parseListenAddress(text);
    return text;
  } catch {
    return at.problem(CODES.INVALID_VALUE, `"${text}" is not HOST:PORT or none`, 'e.g. "127.0.0.1:8080", "[::1]:8080", "none"');
  }
};

const status: Check = (text, at) => {
  const bad = text.split(',').map((s) => s.trim()).find((s) => !['git-notes', 'github', 'none'].includes(s));
  return bad === undefined ? text : at.problem(CODES.INVALID_VALUE, `"${bad}" is not a status reporter`, 'a comma-separated list of "git-notes" and "github", or "none"');
};

/** `allow-mount`, `allow-device`: absolute host paths (a host path relative to a configuration file would be a guess). */
const hostPath =
  (under?: string): Check =>
  (text, at) => {
    const c = canonicalHostPath(text);
    if (c === undefined) return at.problem(CODES.INVALID_VALUE, `"${text}" is not an absolute host path`, 'host paths are never taken from the configuration file\'s directory');
    if (under !== undefined && !c.startsWith(under)) return at.problem(CODES.INVALID_VALUE, `"${text}" is not under ${under}`);
    return text;
  };

/** `docker-socket`, `podman-socket`: an engine's socket, there when the agent starts (an absolute path, or unix://PATH). */
const engineSocket: Check = (text, at) => {
  const bare = text.startsWith('unix://') ? text.slice('unix://'.length) : text;
  if (!isAbsolute(bare)) return at.problem(CONFIG_CODES.ENGINE_SOCKET_INVALID, `"${text}" is not an absolute path to a local socket`, 'e.g. "/run/podman/podman.sock"; tcp:// and ssh:// engines are not spoken');
  const problem = socketProblem(bare);
  if (problem) return at.problem(CONFIG_CODES.ENGINE_SOCKET_MISSING, `${bare} ${problem}`, 'start the engine (its socket unit: systemctl enable --now docker.socket or podman.socket), or correct the path');
  return bare;
};

const capability: Check = (text, at) =>
  canonicalCapability(text) !== undefined ? text : at.problem(CODES.BAD_CAPABILITY, `"${text}" is not a Linux capability`, 'e.g. "CAP_NET_ADMIN"');

export const CONFIG_RULES: Record<AgentOptionName, Rule> = {
  dir: one(path),
  repo: one(gitLocation),
  plan: one(),
  ref: one(),
  'state-dir': one(path),
  listen: one(listen),
  'listen-public': boolean,
  socket: one(path),
  dashboard: boolean,
  device: one(device),
  label: labels,
  poll: duration(true),
  concurrency: wholeNumber,
  grace: duration(false),
  'log-format': oneOf('pretty', 'json'),
  'stop-on-exit': boolean,
  'allow-agent-update': boolean,
  window: one((text, at) => {
    const w = parseWindowText(text);
    return typeof w === 'string' ? at.problem(CODES.INVALID_VALUE, w, 'window = "mon,tue 02:00-04:00 Europe/Berlin"') : text;
  }),
  settle: duration(false),
  'max-backoff': duration(false),
  'crash-loop-limit': wholeNumber,
  'healthy-spell': duration(false),
  'log-max-bytes': wholeNumber,
  'log-keep': wholeNumber,
  'git-token-file': one(secretFile('Git token')),
  status: one(status),
  'status-repo': one(gitLocation),
  'status-token-file': one(secretFile('reports repository token')),
  'github-repo': one(),
  'github-token-file': one(secretFile('GitHub token')),
  'github-api': one(httpUrl),
  'webhook-secret-file': one(secretFile('webhook secret')),
  'allow-history-rewrite': boolean,
  'on-failure': oneOf('none', 'rollback'),
  'enrollment-key': many(publicKeyFile('enrollment key', 'enrollment-key = ["/etc/keystone/keys/enroll.pub"]')),
  certificate: one(certificateFile),
  'allow-privileged': boolean,
  'allow-host-namespaces': boolean,
  'allow-mount': many(hostPath()),
  'allow-capability': many(capability),
  'allow-device': many(hostPath('/dev/')),
  'allow-root': boolean,
  'docker-socket': one(engineSocket),
  'podman-socket': one(engineSocket),
  'trusted-key': many(publicKeyFile('trusted key', 'trusted-key = ["/etc/keystone/keys/release.pub"]')),
  threshold: wholeNumber,
  'max-age': duration(true),
  'max-clock-skew': duration(false),
  'allow-unsigned': boolean,
  'require-ref': boolean,
};

/** For a key that would hold a secret inline (`git-token = "…"`): where the secret goes instead; undefined for other keys. */
export function inlineSecretHint(key: string): string | undefined {
  if (!/token|secret|passw|credential|api-?key/i.test(key)) return undefined;
  if (/^api-?token$/i.test(key)) return "the agent's API token is <state-dir>/api-token, which the agent writes itself";
  const file = /github/i.test(key) ? 'github-token-file' : /webhook|hmac/i.test(key) ? 'webhook-secret-file' : /git|token|passw|credential/i.test(key) ? 'git-token-file' : undefined;
  return `put it in a file only root can read (chmod 600)${file ? ` and name that file with ${file}` : ' and name that file'}`;
}
