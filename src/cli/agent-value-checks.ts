// The checks of one value of an agent setting (a path, a Git location, a label, a socket…): the `Check`s the rules of
// agent-config-rules.ts are built of. Apart from the rules and their table because each check stands alone, as the
// checks of named files do (named-file-checks.ts); the rules file keeps how a key's value is read and said.
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseListenAddress } from '../api/listen-address.js';
import { canonicalCapability, canonicalHostPath } from '../core/device-policy.js';
import { CODES } from '../core/errors.js';
import {
  deviceNameProblem,
  LABEL_KEY_HINT,
  LABEL_VALUE_HINT,
  labelKeyProblem,
  labelValueProblem,
} from '../core/labels.js';
import { parseGitRepo } from '../git/git-repo-location.js';
import { CONFIG_CODES } from './agent-config-error.js';
import type { Check } from './config-at.js';
import { ENGINE_ARG_CODES, socketProblem } from './engine-args.js';
import { UsageError } from './io.js';

export const path: Check = (text, at) => resolve(at.dir, text);

/** `repo` and `status-repo`: an http(s) URL as it is, a `file://` URL or a path made absolute from the file's directory. */
export const gitLocation: Check = (text, at) => {
  try {
    const loc = parseGitRepo(text);
    if (loc.kind === 'http') return text;
  } catch (e) {
    if ((e as { code?: string }).code === 'KS_GIT_CREDENTIALS_IN_URL')
      return at.problem(
        CONFIG_CODES.SECRET_INLINE,
        'the URL carries credentials, which never go in the configuration',
        'put the token in a file (chmod 600) and name it with git-token-file',
        `${at.flag}: ${(e as Error).message}`,
      );
    return at.problem(CODES.INVALID_VALUE, (e as Error).message);
  }
  return /^file:\/\//i.test(text) ? fileURLToPath(text) : resolve(at.dir, text);
};

/** `github-repo`: where commit statuses go, OWNER/REPO. */
export const ownerRepo: Check = (text, at) =>
  /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(text)
    ? text
    : at.problem(
        CODES.INVALID_VALUE,
        `"${text}" is not OWNER/REPO`,
        'e.g. "acme/edge"',
        `--github-repo must be OWNER/REPO, not "${text}"`,
      );

export const httpUrl: Check = (text, at) => {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return at.problem(CODES.INVALID_VALUE, `"${text}" is not a URL`, 'e.g. "https://api.github.com"');
  }
  if (url.username || url.password)
    return at.problem(
      CONFIG_CODES.SECRET_INLINE,
      'the URL carries credentials, which never go in the configuration',
      'name a token file with github-token-file',
    );
  return url.protocol === 'http:' || url.protocol === 'https:'
    ? text
    : at.problem(CODES.INVALID_VALUE, `unsupported URL scheme ${url.protocol}`, 'http or https');
};

export const label: Check = (text, at) => {
  const eq = text.indexOf('=');
  if (eq < 0)
    return at.problem(
      CODES.BAD_LABEL,
      `${JSON.stringify(text)} is not KEY=VALUE`,
      'e.g. "role=gateway"',
      `--label takes KEY=VALUE, not ${JSON.stringify(text)}`,
    );
  const keyProblem = labelKeyProblem(text.slice(0, eq));
  const problem = keyProblem ?? labelValueProblem(text.slice(eq + 1));
  const hint = keyProblem ? LABEL_KEY_HINT : LABEL_VALUE_HINT;
  return problem ? at.problem(CODES.BAD_LABEL, problem, hint, `--label ${text}: ${problem} (${hint})`) : text;
};

export const device: Check = (text, at) => {
  const problem = deviceNameProblem(text);
  return problem ? at.problem(CODES.BAD_NAME, problem) : text;
};

export const listen: Check = (text, at) => {
  try {
    parseListenAddress(text);
    return text;
  } catch (e) {
    return at.problem(
      CODES.INVALID_VALUE,
      `"${text}" is not HOST:PORT or none`,
      'e.g. "127.0.0.1:8080", "[::1]:8080", "none"',
      (e as Error).message,
    );
  }
};

export const status: Check = (text, at) => {
  const bad = text
    .split(',')
    .map((s) => s.trim())
    .find((s) => !['git-notes', 'github', 'none'].includes(s));
  return bad === undefined
    ? text
    : at.problem(
        CODES.INVALID_VALUE,
        `"${bad}" is not a status reporter`,
        'a comma-separated list of "git-notes" and "github", or "none"',
        `--status takes git-notes, github or none, not "${bad}"`,
      );
};

/** `allow-mount`, `allow-device`: absolute host paths (a host path relative to a configuration file would be a guess). */
export const hostPath =
  (under?: string): Check =>
  (text, at) => {
    const c = canonicalHostPath(text);
    if (c === undefined)
      return at.problem(
        CODES.INVALID_VALUE,
        `"${text}" is not an absolute host path`,
        "host paths are never taken from the configuration file's directory",
        `${at.flag} takes an absolute host path, not "${text}"`,
      );
    if (under !== undefined && !c.startsWith(under))
      return at.problem(
        CODES.INVALID_VALUE,
        `"${text}" is not under ${under}`,
        undefined,
        `${at.flag} takes a path under ${under}, not "${text}"`,
      );
    return text;
  };

/** What a flag says to do about an engine's socket that is not there (cli/engine-args.ts says the same of DOCKER_HOST's). */
const START_ENGINE = {
  'docker-socket': 'start the engine (systemctl start docker) or name its socket',
  'podman-socket': "start Podman's API socket (systemctl enable --now podman.socket) or name its socket",
} as Record<string, string>;

/**
 * `docker-socket`, `podman-socket`: an engine's socket, there when the agent starts (an absolute path, or unix://PATH).
 * A flag's relative path is taken from the working directory, as any flag's path; the file names sockets absolutely.
 */
export const engineSocket: Check = (text, at) => {
  const bare = text.startsWith('unix://') ? text.slice('unix://'.length) : text;
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(bare);
  if (scheme || (!isAbsolute(bare) && at.flag === undefined))
    return at.problem(
      CONFIG_CODES.ENGINE_SOCKET_INVALID,
      `"${text}" is not an absolute path to a local socket`,
      'e.g. "/run/podman/podman.sock"; tcp:// and ssh:// engines are not spoken',
      at.flag &&
        new UsageError(
          `${at.flag} takes a local socket's path (or unix://PATH), not "${text}"`,
          ENGINE_ARG_CODES.SOCKET_INVALID,
        ),
    );
  const socket = resolve(at.dir, bare);
  const problem = socketProblem(socket);
  if (problem)
    return at.problem(
      CONFIG_CODES.ENGINE_SOCKET_MISSING,
      `${socket} ${problem}`,
      'start the engine (its socket unit: systemctl enable --now docker.socket or podman.socket), or correct the path',
      at.flag &&
        new UsageError(
          `${at.flag} ${socket} ${problem}: ${START_ENGINE[String(at.path[0])]}`,
          ENGINE_ARG_CODES.SOCKET_MISSING,
        ),
    );
  return socket;
};

export const capability: Check = (text, at) =>
  canonicalCapability(text) !== undefined
    ? text
    : at.problem(
        CODES.BAD_CAPABILITY,
        `"${text}" is not a Linux capability`,
        'e.g. "CAP_NET_ADMIN"',
        `--allow-capability: "${text}" is not a Linux capability (e.g. CAP_NET_ADMIN)`,
      );
