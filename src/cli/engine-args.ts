// `--docker-socket PATH`, `--podman-socket PATH` and DOCKER_HOST (SPEC §18): where the agent finds each container
// engine, checked with the other flags, so that a socket named wrongly is exit 2 at start, not a container that
// fails to start later. DOCKER_HOST is honoured as the docker CLI reads it, unix:// only: the agent talks to a local
// engine over its socket; a tcp:// engine (no TLS: root for whoever reaches the port), ssh:// or fd:// one is refused.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { SocketPaths } from '../runtime/container-engine.js';
import { UsageError } from './io.js';

export const ENGINE_OPTIONS = {
  'docker-socket': { type: 'string' },
  'podman-socket': { type: 'string' },
} as const;

export const ENGINE_USAGE =
  '[--docker-socket PATH] [--podman-socket PATH]   (default: DOCKER_HOST=unix://…, /var/run/docker.sock; /run/podman/podman.sock)';

/** Stable codes of the refusals below (exit 2). */
export const ENGINE_ARG_CODES = {
  /** A socket named by a flag, a configuration key or DOCKER_HOST that is not there, or is not a socket. */
  SOCKET_MISSING: 'KS_ENGINE_SOCKET_MISSING',
  /** DOCKER_HOST of a scheme other than unix:// (tcp://, ssh://, fd://, npipe://). */
  DOCKER_HOST_UNSUPPORTED: 'KS_DOCKER_HOST_UNSUPPORTED',
  /** `--docker-socket tcp://…`: the flags take a path (or unix://PATH). */
  SOCKET_INVALID: 'KS_ENGINE_SOCKET_INVALID',
} as const;

export interface EngineValues {
  'docker-socket'?: string;
  'podman-socket'?: string;
}

/** Why `path` cannot be an engine's socket (it is not there, or it is something else), or undefined. */
export function socketProblem(path: string): string | undefined {
  try {
    return statSync(path).isSocket() ? undefined : 'is not a socket';
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR'
      ? 'does not exist'
      : `cannot be reached (${code ?? (e as Error).message})`;
  }
}

/**
 * The sockets the agent uses instead of the defaults: `--docker-socket`, else DOCKER_HOST's unix:// path; and
 * `--podman-socket`. An engine not named keeps its default places (container-engine.ts engineEndpoints). Throws
 * UsageError (KS_ENGINE_SOCKET_MISSING, KS_DOCKER_HOST_UNSUPPORTED) for a socket that is not there or a DOCKER_HOST
 * the agent does not speak.
 */
export function engineSocketsFrom(
  values: EngineValues,
  env: Record<string, string | undefined>,
  cwd: string,
): SocketPaths {
  const out: { docker?: string[]; podman?: string[] } = {};
  const given = (flag: 'docker-socket' | 'podman-socket'): string | undefined => {
    const text = values[flag];
    if (text === undefined) return undefined;
    if (text === '')
      throw new UsageError(
        `--${flag} takes the engine's socket, e.g. ${flag === 'docker-socket' ? '/var/run/docker.sock' : '/run/podman/podman.sock'}`,
      );
    const bare = text.startsWith('unix://') ? text.slice('unix://'.length) : text;
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(bare))
      throw new UsageError(
        `--${flag} takes a local socket's path (or unix://PATH), not "${text}"`,
        ENGINE_ARG_CODES.SOCKET_INVALID,
      );
    const path = resolve(cwd, bare);
    const problem = socketProblem(path);
    if (problem)
      throw new UsageError(
        `--${flag} ${path} ${problem}: ${hint(flag === 'docker-socket' ? 'docker' : 'podman')}`,
        ENGINE_ARG_CODES.SOCKET_MISSING,
      );
    return path;
  };
  const docker = given('docker-socket') ?? dockerHostSocket(env.DOCKER_HOST);
  const podman = given('podman-socket');
  if (docker !== undefined) out.docker = [docker];
  if (podman !== undefined) out.podman = [podman];
  return out;
}

/** DOCKER_HOST's socket path; undefined when it is not set (or empty, which the docker CLI ignores too). */
function dockerHostSocket(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!value.startsWith('unix://'))
    throw new UsageError(
      `DOCKER_HOST=${value}: the agent reaches Docker through a local unix socket only (DOCKER_HOST=unix:///var/run/docker.sock); ` +
        'a tcp:// engine without TLS is root for whoever reaches its port, and ssh://, fd:// and npipe:// are not spoken: unset DOCKER_HOST, or give --docker-socket PATH',
      ENGINE_ARG_CODES.DOCKER_HOST_UNSUPPORTED,
    );
  const path = value.slice('unix://'.length);
  const problem = path.startsWith('/') ? socketProblem(path) : 'is not an absolute path';
  if (problem)
    throw new UsageError(
      `DOCKER_HOST=${value}: ${path} ${problem}: ${hint('docker')}, or unset DOCKER_HOST`,
      ENGINE_ARG_CODES.SOCKET_MISSING,
    );
  return path;
}

const hint = (engine: 'docker' | 'podman') =>
  engine === 'docker'
    ? 'start the engine (systemctl start docker) or name its socket'
    : "start Podman's API socket (systemctl enable --now podman.socket) or name its socket";
