// What the agent refuses about settings together (a Git-only key with `dir`, no trust, a public address without
// `listen-public`, …), each written once for both of its voices: the configuration file's (agent-config.ts: the file,
// the TOML path, the line) and the command line's (agent-flags.ts: the flag's words, exit 2). A value's own checks are
// agent-config-rules.ts'; these see values that passed them.
import { readFileSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { isLoopbackAddress, parseListenAddress } from '../api/listen-address.js';
import { CODES } from '../core/errors.js';
import type { TomlPath } from '../core/toml-locate.js';
import { ownerRepoFromUrl } from '../report/github-status-reporter.js';
import { parsePublicKey } from '../trust/minisign.js';
import { TrustError } from '../trust/trust-error.js';
import { CONFIG_CODES, type ConfigCode } from './agent-config-error.js';
import type { ConfigValue, FlagWords } from './agent-config-rules.js';
import type { AgentOptionName } from './agent-option-table.js';

/** The settings a combination looks at. */
export interface Settings {
  value(key: AgentOptionName): ConfigValue | undefined;
  /** The key is set: in the file, written (even with a bad value); on the command line, given or defaulted. */
  has(key: AgentOptionName): boolean;
  /** Written with a value its rule refused (and reported already): the file's only; a refused flag stops everything. */
  bad(key: AgentOptionName): boolean;
}

/** Reports one refusal: for the file at `path`, for the command line in the flag's words. */
export type Say = (
  path: TomlPath,
  code: ConfigCode,
  message: string,
  hint: string | undefined,
  flagWords: NonNullable<FlagWords>,
) => void;

export interface Combination {
  /** The keys it reads: on the command line it is checked again only when a flag gives one of them. */
  keys: readonly AgentOptionName[];
  check(s: Settings, say: Say): void;
}

/** Keys that only make sense when following Git (`repo`): refused with `dir`. */
export const GIT_ONLY = [
  'ref',
  'poll',
  'git-token-file',
  'status',
  'status-repo',
  'status-token-file',
  'github-repo',
  'github-token-file',
  'github-api',
  'webhook-secret-file',
] as const;

const list = (s: Settings, key: AgentOptionName) => (s.value(key) as string[] | undefined) ?? [];

export const COMBINATIONS: readonly Combination[] = [
  {
    keys: ['repo', 'dir'],
    check(s, say) {
      const flag = 'give one source: --repo URL|PATH (Git) or --dir PATH (a development directory)';
      if (s.has('repo') && s.has('dir'))
        say(
          ['dir'],
          CONFIG_CODES.SOURCE,
          'repo and dir exclude each other: the agent follows one source',
          'keep repo (Git) or dir (a development directory)',
          flag,
        );
      if (!s.has('repo') && !s.has('dir'))
        say(
          [],
          CONFIG_CODES.SOURCE,
          'no source: the file names neither repo nor dir',
          'add repo = "https://…" (a Git repository, or its path) or dir = "/srv/…" (a development directory)',
          flag,
        );
    },
  },
  {
    keys: ['repo', 'dir', ...GIT_ONLY, 'allow-history-rewrite', 'on-failure'],
    check(s, say) {
      if (!s.has('dir') || s.has('repo')) return;
      for (const key of GIT_ONLY)
        if (s.has(key))
          say(
            [key],
            CONFIG_CODES.CONFLICT,
            `${key} is for a Git source (repo), not dir`,
            undefined,
            `--${key} is for a Git source (--repo), not --dir`,
          );
      // One flag message for both, as it always was.
      const flag = '--allow-history-rewrite or --on-failure is for a Git source (--repo), not --dir';
      if (s.value('allow-history-rewrite') === true)
        say(
          ['allow-history-rewrite'],
          CONFIG_CODES.CONFLICT,
          'allow-history-rewrite is for a Git source (repo), not dir',
          undefined,
          flag,
        );
      if (s.value('on-failure') === 'rollback')
        say(
          ['on-failure'],
          CONFIG_CODES.CONFLICT,
          'on-failure = "rollback" is for a Git source (repo), not dir',
          undefined,
          flag,
        );
    },
  },
  {
    // The plan is a path inside the repository: an absolute one must lie inside the directory followed.
    keys: ['plan', 'dir'],
    check(s, say) {
      const plan = s.value('plan') as string | undefined;
      const dir = s.value('dir') as string | undefined;
      if (plan === undefined || dir === undefined || !isAbsolute(plan)) return;
      const rel = relative(dir, plan);
      if (rel.startsWith('..') || isAbsolute(rel))
        say(
          ['plan'],
          CODES.INVALID_VALUE,
          `${plan} is not inside the repository ${dir}`,
          'a plan is a path inside the repository',
          `${plan} is not inside the repository ${dir}`,
        );
    },
  },
  {
    keys: ['allow-unsigned', 'trusted-key', 'require-ref'],
    check(s, say) {
      if (s.bad('allow-unsigned') || s.bad('trusted-key')) return;
      const unsigned = s.value('allow-unsigned') === true;
      const keys = list(s, 'trusted-key');
      if (unsigned && keys.length)
        say(
          ['allow-unsigned'],
          CONFIG_CODES.CONFLICT,
          'allow-unsigned and trusted-key exclude each other',
          'a device verifies every revision, or (in development only) none',
          '--allow-unsigned and --trusted-key exclude each other',
        );
      else if (unsigned && s.value('require-ref') === true)
        say(
          ['require-ref'],
          CONFIG_CODES.CONFLICT,
          'require-ref checks signatures: it makes no sense with allow-unsigned',
          undefined,
          '--require-ref checks signatures: it makes no sense with --allow-unsigned',
        );
      if (!unsigned && !keys.length)
        say(
          ['trusted-key'],
          CODES.MISSING_FIELD,
          'no trusted key',
          'add trusted-key = ["/etc/keystone/keys/release.pub"], or allow-unsigned = true for development',
          'no trusted key: give --trusted-key FILE (repeatable), or --allow-unsigned for development',
        );
    },
  },
  {
    keys: ['threshold', 'trusted-key', 'allow-unsigned'],
    check(s, say) {
      const threshold = s.value('threshold') === undefined ? undefined : Number(s.value('threshold'));
      const keys = s.value('trusted-key') as string[] | undefined;
      if (threshold === undefined || keys === undefined || s.bad('trusted-key') || s.value('allow-unsigned') === true)
        return;
      // Distinct keys, not distinct file names: two copies of one key are one signer (as the agent counts them at start).
      const distinct = new Set(
        keys.map((file) => Buffer.from(parsePublicKey(readFileSync(file, 'utf8')).publicKey).toString('hex')),
      ).size;
      if (distinct < threshold)
        say(
          ['threshold'],
          CODES.INVALID_VALUE,
          `a threshold of ${threshold} needs at least ${threshold} distinct trusted keys; ${distinct} named`,
          undefined,
          new TrustError(
            'KS_THRESHOLD_NOT_MET',
            `a threshold of ${threshold} needs at least ${threshold} distinct trusted keys; ${distinct} given`,
          ),
        );
    },
  },
  {
    // Loopback unless the operator says otherwise in so many words: the API steers every component on the device.
    keys: ['listen', 'listen-public'],
    check(s, say) {
      const listen = s.value('listen') as string | undefined;
      if (listen === undefined || s.value('listen-public') === true) return;
      const address = parseListenAddress(listen);
      if (address && !isLoopbackAddress(address))
        say(
          ['listen'],
          CONFIG_CODES.CONFLICT,
          `${listen} is not a loopback address`,
          'add listen-public = true to expose the API beyond this machine',
          `--listen ${listen} is not a loopback address: add --listen-public to expose the API beyond this machine`,
        );
    },
  },
  {
    // The reports repository's own credential: without the repository it would go nowhere.
    keys: ['status-token-file', 'status-repo'],
    check(s, say) {
      if (s.has('status-token-file') && !s.has('status-repo'))
        say(
          ['status-token-file'],
          CODES.MISSING_FIELD,
          'status-token-file is the token of status-repo: give the reports repository too',
          undefined,
          '--status-token-file is the token of --status-repo: give the reports repository too',
        );
    },
  },
  {
    keys: ['status', 'github-repo', 'repo'],
    check(s, say) {
      const status = s.value('status') as string | undefined;
      const repo = s.value('repo') as string | undefined;
      if (
        status === undefined ||
        repo === undefined ||
        s.has('github-repo') ||
        !status.split(',').some((x) => x.trim() === 'github')
      )
        return;
      if (!ownerRepoFromUrl(repo))
        say(
          ['status'],
          CODES.MISSING_FIELD,
          `status "github" needs github-repo = "OWNER/REPO" (it cannot be read from ${repo})`,
          undefined,
          `--status github: give --github-repo OWNER/REPO (it cannot be read from ${repo})`,
        );
    },
  },
  {
    // One key, one role: a release key that also enrols devices lets whoever holds it mint an identity as well as sign
    // what runs, and an enrolment key trusted as a release key (`keystonectl keygen` makes both alike) would let the
    // enrolment desk sign releases.
    keys: ['enrollment-key', 'trusted-key', 'allow-unsigned'],
    check(s, say) {
      if (s.bad('enrollment-key') || s.bad('trusted-key') || s.value('allow-unsigned') === true) return;
      const hex = (file: string) => Buffer.from(parsePublicKey(readFileSync(file, 'utf8')).publicKey).toString('hex');
      const release = new Set(list(s, 'trusted-key').map(hex));
      list(s, 'enrollment-key').forEach((file, i) => {
        if (release.has(hex(file)))
          say(
            ['enrollment-key', i],
            CONFIG_CODES.CONFLICT,
            `the enrollment key ${file} is also a trusted key: a release key must not enrol devices, nor an enrolment key sign releases`,
            'make one with keystonectl keygen --out enroll',
            `--enrollment-key ${file} is also a --trusted-key: a release key must not enrol devices, nor an enrolment key sign releases (make one with keystonectl keygen --out enroll)`,
          );
      });
    },
  },
];
