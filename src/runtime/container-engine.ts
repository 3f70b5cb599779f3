// Finding a container engine: Docker's socket or Podman's Docker-compatible one, the first that answers a ping.
import { existsSync } from 'node:fs';
import type Docker from 'dockerode';
import { ContainerError, engineMessage } from './container-error.js';

export type EngineKind = 'docker' | 'podman';
/** The recipe's `runtime`. */
export type EngineChoice = 'auto' | EngineKind;

/** One place an engine may listen: a unix socket (host and port: a plain-HTTP endpoint, which only tests make). */
export type Endpoint = { kind: EngineKind; label: string } & ({ socketPath: string } | { host: string; port: number });

/** A connected engine: the client for ordinary calls (no timeout: wait and log follows are long). */
export interface Engine {
  kind: EngineKind;
  endpoint: Endpoint;
  docker: Docker;
}

/** Where to look, per engine kind; replaces the defaults (tests point these at files that do not exist). */
export interface SocketPaths {
  docker?: readonly string[];
  podman?: readonly string[];
}

/** How long a ping may take before the endpoint counts as not answering. */
export const PING_TIMEOUT_MS = 2000;

/**
 * The endpoints of `choice`, in order: DOCKER_HOST (unix:// only), /var/run/docker.sock, then Podman's user socket
 * ($XDG_RUNTIME_DIR/podman/podman.sock) and system socket (/run/podman/podman.sock). `auto` is Docker's then Podman's:
 * when both answer, Docker is used. An engine given in `sockets` (the agent's --docker-socket, --podman-socket) is
 * looked for there only. Endpoints that cannot be used (a DOCKER_HOST of another scheme) come back as strings in
 * `unusable` (the agent refuses them at start: cli/engine-args.ts).
 */
export function engineEndpoints(
  choice: EngineChoice,
  env: NodeJS.ProcessEnv,
  sockets: SocketPaths = {},
): { endpoints: Endpoint[]; unusable: string[] } {
  const endpoints: Endpoint[] = [];
  const unusable: string[] = [];
  const unix = (kind: EngineKind, path: string): Endpoint => ({ kind, label: path, socketPath: path });
  if (choice !== 'podman') {
    if (sockets.docker) endpoints.push(...sockets.docker.map((p) => unix('docker', p)));
    else {
      const dockerHost = env.DOCKER_HOST;
      if (dockerHost) {
        const ep = parseDockerHost(dockerHost);
        if (ep) endpoints.push(ep);
        else unusable.push(`DOCKER_HOST=${dockerHost} (only unix:// is spoken)`);
      }
      endpoints.push(unix('docker', '/var/run/docker.sock'));
    }
  }
  if (choice !== 'docker') {
    if (sockets.podman) endpoints.push(...sockets.podman.map((p) => unix('podman', p)));
    else {
      const xdg = env.XDG_RUNTIME_DIR || (process.getuid?.() ? `/run/user/${process.getuid?.()}` : undefined);
      if (xdg) endpoints.push(unix('podman', `${xdg}/podman/podman.sock`));
      endpoints.push(unix('podman', '/run/podman/podman.sock'));
    }
  }
  // The same socket twice (DOCKER_HOST naming the default) is tried once.
  const seen = new Set<string>();
  return { endpoints: endpoints.filter((e) => !seen.has(e.label) && seen.add(e.label)), unusable };
}

/**
 * DOCKER_HOST's socket: unix:// only. A tcp:// engine is reached without TLS (root on the device for whoever reaches
 * its port) and ssh://, fd:// and npipe:// are not spoken; those are unusable, and refused at the agent's start.
 */
function parseDockerHost(value: string): Endpoint | undefined {
  const path = value.startsWith('unix://') ? value.slice('unix://'.length) : undefined;
  return path?.startsWith('/') ? { kind: 'docker', label: path, socketPath: path } : undefined;
}

/** A dockerode client for one endpoint; every modem default that DOCKER_HOST or DOCKER_CLIENT_TIMEOUT would set is overridden. */
export function clientFor(ep: Endpoint, timeoutMs?: number): Docker {
  const where =
    'socketPath' in ep
      ? { socketPath: ep.socketPath, host: undefined, port: undefined }
      : { host: ep.host, port: ep.port, protocol: 'http' as const };
  return new (dockerode())({ ...where, timeout: timeoutMs });
}

let dockerodeClass: typeof Docker | undefined;
/**
 * dockerode, loaded on first use: with its SSH transport it costs a device ~25 MB of memory (modules, and a 16 MB
 * WebAssembly buffer of ssh2), which a device without containers should not pay (issue 16).
 */
export async function loadDockerode(): Promise<typeof Docker> {
  // A dynamic import, not require(): the package's bundler splits it into a file of its own, read only here.
  return (dockerodeClass ??= (await import('dockerode')).default);
}

function dockerode(): typeof Docker {
  if (!dockerodeClass)
    throw new Error('internal: a Docker client was asked for before connectEngine() loaded dockerode');
  return dockerodeClass;
}

/**
 * The first endpoint of `choice` that answers a ping within PING_TIMEOUT_MS.
 * Throws KS_CONTAINER_ENGINE_UNAVAILABLE naming every endpoint tried and why each failed.
 */
export async function connectEngine(
  choice: EngineChoice,
  opts: { env?: NodeJS.ProcessEnv; socketPaths?: SocketPaths } = {},
): Promise<Engine> {
  const { endpoints, unusable } = engineEndpoints(choice, opts.env ?? process.env, opts.socketPaths);
  const tried = [...unusable];
  for (const ep of endpoints) {
    // A socket that is not there cannot answer: said so without loading the client.
    if ('socketPath' in ep && !existsSync(ep.socketPath)) {
      tried.push(`${ep.label} (no such socket)`);
      continue;
    }
    try {
      await loadDockerode();
      await clientFor(ep, PING_TIMEOUT_MS).ping();
      return { kind: ep.kind, endpoint: ep, docker: clientFor(ep) };
    } catch (e) {
      tried.push(`${ep.label} (${describeConnectError(e)})`);
    }
  }
  const which = choice === 'auto' ? 'Docker or Podman' : choice === 'docker' ? 'Docker' : 'Podman';
  throw new ContainerError(
    'KS_CONTAINER_ENGINE_UNAVAILABLE',
    `no ${which} engine answered; tried ${tried.join(', ')}`,
    { tried },
  );
}

/** Why an endpoint did not answer, in the words of KS_CONTAINER_ENGINE_UNAVAILABLE (engine-http.ts says it the same way). */
export function describeConnectError(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOENT') return 'no such socket';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'EACCES') return 'permission denied';
  return engineMessage(e);
}
