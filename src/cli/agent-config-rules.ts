// One rule per setting of the agent, the only place its value is checked: a key of the configuration file (told with
// the file, TOML path and line: agent-config.ts) and the flag of the same name (told as the flag always was, exit 2:
// agent-flags.ts) go through the same rule. Relative paths are taken from the configuration file's directory (the
// agent's working directory is an accident of how it was started; the file's place is not), a flag's from the working
// directory. A key the table misses does not compile: every flag of AGENT_OPTIONS has its rule.
import { parseDuration } from '../core/duration.js';
import { parseWindowText } from '../core/maintenance-window.js';
import { CODES } from '../core/errors.js';
import { deviceNameProblem } from '../core/labels.js';
import { describe } from '../core/toml-document.js';
import { TrustError } from '../trust/trust-error.js';
import { CONFIG_CODES, type ConfigCode } from './agent-config-error.js';
import {
  capability,
  device,
  engineSocket,
  gitLocation,
  hostPath,
  httpUrl,
  label,
  listen,
  ownerRepo,
  path,
  status,
} from './agent-value-checks.js';
import type { At, Check, FlagWords } from './config-at.js';
import type { AgentOptionName } from './agent-option-table.js';
import { certificateFile, publicKeyFile, secretFile } from './named-file-checks.js';

export type { At, FlagWords } from './config-at.js';

/** A key's flag words for any problem of its value, unless the check gives its own. */
type KeyWords = (text: string, said: { code: ConfigCode; message: string }, at: At) => FlagWords;

/** `at`, with `words` said for a flag's problem that has no words of its own. */
function worded(at: At, text: string, words: KeyWords | undefined): At {
  if (words === undefined || at.flag === undefined) return at;
  return {
    ...at,
    problem: (code, message, hint, own) => at.problem(code, message, hint, own ?? words(text, { code, message }, at)),
  };
}

export type ConfigValue = string | boolean | string[];

/** A key's rule: the value as the agent's flag would carry it (paths made absolute), or undefined after reporting. */
export type Rule = (raw: unknown, at: (index?: number) => At) => ConfigValue | undefined;

const DURATION_HINT = 'use Go style: "300ms", "10s", "2m0s", "1h30m"';

const wrongType = (at: At, expected: string, raw: unknown, hint?: string) =>
  at.problem(CODES.INVALID_TYPE, `expected ${expected}, got ${describe(raw)}`, hint);

function plainText(text: string, at: At): string | undefined {
  if (text === '') return at.problem(CODES.INVALID_VALUE, 'must not be empty', 'leave the key out for the default');
  if (/\p{Cc}/u.test(text)) return at.problem(CODES.INVALID_VALUE, 'must not contain control characters');
  return text;
}

/** A key with no check beyond plainText's, which every string gets. */
const asIs: Check = (text) => text;

/** A string key (a flag's text is always a string: the type is the file's business). */
const one =
  (check: Check = asIs, typeHint?: string, words?: KeyWords): Rule =>
  (raw, at) => {
    if (typeof raw !== 'string') return wrongType(at(), 'a string', raw, typeHint);
    const here = worded(at(), raw, words);
    return plainText(raw, here) === undefined ? undefined : check(raw, here);
  };

/** A repeatable flag's key: an array of strings (an empty array is the flag not given). */
const many =
  (check: Check = asIs, words?: KeyWords): Rule =>
  (raw, at) => {
    if (!Array.isArray(raw)) {
      const key = String(at().path[0]);
      return wrongType(
        at(),
        'an array of strings',
        raw,
        typeof raw === 'string' ? `write ${key} = [${JSON.stringify(raw)}]` : undefined,
      );
    }
    const out: string[] = [];
    raw.forEach((item: unknown, i) => {
      const here = typeof item === 'string' ? worded(at(i), item, words) : at(i);
      const v =
        typeof item !== 'string'
          ? wrongType(here, 'a string', item)
          : plainText(item, here) === undefined
            ? undefined
            : check(item, here);
      if (v !== undefined) out.push(v);
    });
    return out.length === raw.length ? out : undefined;
  };

/** The words most flags have said: `--concurrency must be a whole number ≥ 1, not "0"`. */
const mustBe =
  (what: string): KeyWords =>
  (text, _said, at) =>
    `${at.flag} must be ${what}, not "${text}"`;

const boolean: Rule = (raw, at) => (typeof raw === 'boolean' ? raw : wrongType(at(), 'a boolean (true or false)', raw));

/** `concurrency = 2` or `concurrency = "2"` (`--concurrency 2`): a whole number ≥ 1, carried as the flag's text. */
const wholeNumber =
  (words: KeyWords = mustBe('a whole number ≥ 1')): Rule =>
  (raw, at) => {
    if (typeof raw !== 'number' && typeof raw !== 'string') return wrongType(at(), 'a whole number (2 or "2")', raw);
    const here = worded(at(), String(raw), words);
    const whole = typeof raw === 'number' ? Number.isSafeInteger(raw) : /^[0-9]{1,15}$/.test(raw);
    if (!whole) return here.problem(CODES.INVALID_VALUE, `${describe(raw)} is not a whole number`);
    if (Number(raw) < 1) return here.problem(CODES.INVALID_VALUE, `must be at least 1, got ${describe(raw)}`);
    return String(Number(raw));
  };

const duration = (positive: boolean, words: KeyWords): Rule =>
  one(
    (text, at) => {
      const ms = parseDuration(text);
      if (ms === undefined) return at.problem(CODES.BAD_DURATION, `"${text}" is not a duration`, DURATION_HINT);
      if (positive && ms <= 0) return at.problem(CODES.BAD_DURATION, `"${text}" must be more than zero`, DURATION_HINT);
      return text;
    },
    'durations are strings, e.g. "10s"',
    words,
  );

const oneOf = (...choices: string[]): Rule =>
  one(
    (text, at) =>
      choices.includes(text)
        ? text
        : at.problem(
            CODES.INVALID_VALUE,
            `"${text}" is not allowed`,
            `one of ${choices.map((c) => JSON.stringify(c)).join(', ')}`,
          ),
    undefined,
    mustBe(choices.join(' or ')),
  );

/** Labels, and one key given twice with two values (a mistake, not a choice: as with --label). */
const labels: Rule = (raw, at) => {
  const list = many(label, (text) => `--label takes KEY=VALUE, not ${JSON.stringify(text)}`)(raw, at) as
    string[] | undefined;
  if (!list) return undefined;
  const seen = new Map<string, string>();
  const valueOf = (text: string) => JSON.stringify(text.slice(text.indexOf('=') + 1));
  for (const [i, text] of list.entries()) {
    const key = text.slice(0, text.indexOf('='));
    const before = seen.get(key);
    if (before !== undefined && before !== text)
      return at(i).problem(
        CODES.BAD_LABEL,
        `the label ${key} is given twice, as ${JSON.stringify(before)} and ${JSON.stringify(text)}`,
        undefined,
        `--label ${key} is given twice, as ${valueOf(before)} and ${valueOf(text)}`,
      );
    seen.set(key, text);
  }
  return list;
};

/** Words several flags shared: a refusal that names the flags that go together. */
const saying =
  (words: string): KeyWords =>
  () =>
    words;
const TIMING = saying('--max-backoff and --healthy-spell take durations, --crash-loop-limit a whole number ≥ 1');
const STOPPING = saying('--grace and --settle take durations such as 10s');
/** Words for the empty value only (a flag's `--x ""`), the check's own for the rest. */
const whenEmpty =
  (words: (flag: string) => string): KeyWords =>
  (text, _said, at) =>
    text === '' ? words(String(at.flag)) : undefined;

export const CONFIG_RULES: Record<AgentOptionName, Rule> = {
  dir: one(path),
  repo: one(gitLocation),
  plan: one(
    asIs,
    undefined,
    whenEmpty(() => '--plan takes a plan file; leave it out to take the plan from fleet.toml'),
  ),
  ref: one(),
  'state-dir': one(path),
  listen: one(listen),
  'listen-public': boolean,
  socket: one(path),
  dashboard: boolean,
  device: one(device, undefined, (text, s) =>
    s.code === CODES.BAD_NAME ? undefined : `--device: ${deviceNameProblem(text) ?? s.message}`,
  ),
  label: labels,
  poll: duration(true, (text) => `--poll takes a duration such as 60s, not "${text}"`),
  concurrency: wholeNumber(),
  grace: duration(false, STOPPING),
  'log-format': oneOf('pretty', 'json'),
  'stop-on-exit': boolean,
  'allow-agent-update': boolean,
  window: one((text, at) => {
    const w = parseWindowText(text);
    return typeof w === 'string'
      ? at.problem(CODES.INVALID_VALUE, w, 'window = "mon,tue 02:00-04:00 Europe/Berlin"')
      : text;
  }),
  settle: duration(false, STOPPING),
  'max-backoff': duration(false, TIMING),
  'crash-loop-limit': wholeNumber(TIMING),
  'healthy-spell': duration(false, TIMING),
  'log-max-bytes': wholeNumber(),
  'log-keep': wholeNumber(),
  'git-token-file': one(secretFile('Git token')),
  status: one(status),
  'status-repo': one(gitLocation),
  'status-token-file': one(secretFile('reports repository token')),
  'github-repo': one(ownerRepo),
  'github-token-file': one(secretFile('GitHub token')),
  'github-api': one(httpUrl),
  'webhook-secret-file': one(secretFile('webhook secret')),
  'allow-history-rewrite': boolean,
  'on-failure': oneOf('none', 'rollback'),
  'enrollment-key': many(
    publicKeyFile('enrollment key', 'enrollment-key = ["/etc/keystone/keys/enroll.pub"]', {
      cannot: (file, _text, reason) => `cannot read the enrollment key ${file}: ${reason}`,
      malformed: (file, _text, e) => `--enrollment-key ${file} is not a minisign public key: ${e.message}`,
    }),
  ),
  certificate: one(
    certificateFile,
    undefined,
    whenEmpty(() => '--certificate takes the file keystonectl enroll wrote for this device'),
  ),
  'allow-privileged': boolean,
  'allow-host-namespaces': boolean,
  'allow-mount': many(hostPath()),
  'allow-capability': many(capability),
  'allow-device': many(hostPath('/dev/')),
  'allow-root': boolean,
  'docker-socket': one(
    engineSocket,
    undefined,
    whenEmpty((flag) => `${flag} takes the engine's socket, e.g. /var/run/docker.sock`),
  ),
  'podman-socket': one(
    engineSocket,
    undefined,
    whenEmpty((flag) => `${flag} takes the engine's socket, e.g. /run/podman/podman.sock`),
  ),
  'trusted-key': many(
    publicKeyFile('trusted key', 'trusted-key = ["/etc/keystone/keys/release.pub"]', {
      cannot: (_file, text, _reason, detail) => `cannot read the trusted key ${text}: ${detail}`,
      // As the keyring said it: refused (exit 2) with the trust layer's code.
      malformed: (_file, text, e) =>
        new TrustError(
          e.code === CONFIG_CODES.WEAK_KEY ? 'KS_WEAK_KEY' : 'KS_KEY_MALFORMED',
          `${text}: ${e.message}`,
          text,
        ),
    }),
  ),
  threshold: wholeNumber(),
  'max-age': duration(true, mustBe('a duration such as 720h')),
  'max-clock-skew': duration(false, mustBe('a duration such as 5m')),
  'allow-unsigned': boolean,
  'require-ref': boolean,
};

/** For a key that would hold a secret inline (`git-token = "…"`): where the secret goes instead; undefined for other keys. */
export function inlineSecretHint(key: string): string | undefined {
  if (!/token|secret|passw|credential|api-?key/i.test(key)) return undefined;
  if (/^api-?token$/i.test(key)) return "the agent's API token is <state-dir>/api-token, which the agent writes itself";
  const file = /github/i.test(key)
    ? 'github-token-file'
    : /webhook|hmac/i.test(key)
      ? 'webhook-secret-file'
      : /git|token|passw|credential/i.test(key)
        ? 'git-token-file'
        : undefined;
  return `put it in a file only root can read (chmod 600)${file ? ` and name that file with ${file}` : ' and name that file'}`;
}
