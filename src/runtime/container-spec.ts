// A container component as the engine's create request: labels that say whose it is, and the default confinement.
import type Docker from 'dockerode';
import type { DesiredComponent } from '../core/desired-state.js';
import type { EngineKind } from './container-engine.js';
import type { SecretMount } from './secret-mounts.js';

/** The labels every Keystone container carries: adoption and clean-up go by these, never by name. */
export const LABELS = {
  component: 'io.keystone.component',
  /** The component's versioned hash (`v1:…`): a container of another hash is an old version. */
  hash: 'io.keystone.hash',
  /** The agent's identity (its ownerTag): a container without ours is never adopted, stopped or removed. */
  owner: 'io.keystone.owner',
  /** Where the agent copies the container's output, so that an agent that restarts resumes copying it. */
  logDir: 'io.keystone.log-dir',
} as const;

/** The engine keeps at most this much output per container (json-file); the agent copies it into the log files. */
export const ENGINE_LOG_MAX = { 'max-size': '10m', 'max-file': '2' } as const;

/** `keystone-<component>-<12 hex of the hash>-<6 random hex>`: readable in `docker ps`, unique per start. */
export function containerName(c: DesiredComponent, random: () => number): string {
  const safe = c.name.replace(/[^a-zA-Z0-9_.-]/g, '-');
  const short = c.hash.replace(/^v\d+:/, '').slice(0, 12);
  const rand = Math.floor(random() * 0x1000000)
    .toString(16)
    .padStart(6, '0');
  return `keystone-${safe}-${short}-${rand}`;
}

/**
 * The create request of `c`: every field of [lifecycle.run.container], with no-new-privileges and every
 * capability dropped but those the recipe grants. The engine restarts nothing (the agent supervises), and
 * its output goes to the json-file driver, bounded, for the agent to copy. `env` replaces the recipe's (its secrets
 * filled in: secret-env.ts), and each secret file is mounted read-only (`secretMounts`).
 */
export function createOptions(
  c: DesiredComponent,
  o: {
    name: string;
    ownerTag: string;
    logDir: string;
    mountSources?: readonly string[];
    env?: Record<string, string>;
    secretMounts?: readonly SecretMount[];
    engine?: EngineKind;
    /** The update lock's directory (SPEC §19), read-write: the container and the agent lock the same file. */
    lockMount?: { source: string; target: string };
  },
): Docker.ContainerCreateOptions {
  const spec = c.recipe.lifecycle.run.container;
  if (!spec) throw new Error(`${c.name} has no [lifecycle.run.container]`);
  const exposed: Record<string, object> = {};
  const bindings: Record<string, { HostPort: string }[]> = {};
  for (const p of spec.ports) {
    const key = `${p.container_port}/tcp`;
    exposed[key] = {};
    (bindings[key] ??= []).push({ HostPort: String(p.host_port) });
  }
  const res = spec.resources;
  const memory = res?.memory_mb !== undefined ? res.memory_mb * 1024 * 1024 : undefined;
  return {
    name: o.name,
    Image: spec.image,
    ...(spec.command && { Cmd: spec.command }),
    Env: Object.entries(o.env ?? spec.env).map(([k, v]) => `${k}=${v}`),
    ...(spec.user !== undefined && { User: spec.user }),
    Labels: {
      [LABELS.component]: c.name,
      [LABELS.hash]: c.hash,
      [LABELS.owner]: o.ownerTag,
      [LABELS.logDir]: o.logDir,
    },
    ExposedPorts: exposed,
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    Tty: false,
    OpenStdin: false,
    HostConfig: {
      NetworkMode: spec.network_mode,
      // "private" is the engine's default, spelled as the empty string; anything else passed the device policy.
      ...namespaceMode('PidMode', spec.pid_mode),
      ...namespaceMode('IpcMode', spec.ipc_mode),
      ...namespaceMode('UTSMode', spec.uts_mode),
      ...namespaceMode('UsernsMode', spec.userns_mode),
      ...(spec.devices?.length && {
        Devices: spec.devices.map((d) => ({ PathOnHost: d, PathInContainer: d, CgroupPermissions: 'rwm' })),
      }),
      PortBindings: bindings,
      Privileged: spec.privileged,
      SecurityOpt: ['no-new-privileges'],
      CapDrop: ['ALL'],
      CapAdd: [...(spec.capabilities ?? [])],
      // `Mounts`, not `Binds`: a bind with a missing source fails instead of being created as an empty directory.
      // The source as the device policy saw it, links resolved (mountSources), when given: not a path to resolve again.
      Mounts: [
        ...spec.mounts.map((m, i) => ({
          Type: 'bind' as const,
          Source: o.mountSources?.[i] ?? m.source,
          Target: m.target,
          ReadOnly: m.read_only,
        })),
        ...(o.secretMounts ?? []).map((m) => ({
          Type: 'bind' as const,
          Source: m.source,
          Target: m.target,
          ReadOnly: true,
        })),
        ...(o.lockMount
          ? [{ Type: 'bind' as const, Source: o.lockMount.source, Target: o.lockMount.target, ReadOnly: false }]
          : []),
      ],
      // The memory limit is the limit: no swap on top of it (ignored, with the engine's warning, without swap accounting).
      ...(memory !== undefined && { Memory: memory, MemorySwap: memory }),
      ...(res?.pids_limit !== undefined && { PidsLimit: res.pids_limit }),
      ...(o.engine === 'podman' && ownNetwork(spec.network_mode) && { Sysctls: { ...DOCKER_NETWORK_SYSCTLS } }),
      RestartPolicy: { Name: 'no' },
      // A small init as PID 1 (the engine's docker-init / catatonit): a program run as PID 1 has no default signal
      // handlers, so SIGTERM would be ignored and every stop would wait out the grace period for SIGKILL.
      Init: true,
      LogConfig: { Type: 'json-file', Config: { ...ENGINE_LOG_MAX } },
    },
  };
}

/**
 * What Docker sets in a container's own network namespace, and Podman does not: any user binds ports below 1024 (the
 * namespace is the container's; its ports reach the host only as published). Sent to Podman so that a recipe binds the
 * same ports on both engines (docs/containers.md, Podman).
 */
export const DOCKER_NETWORK_SYSCTLS = { 'net.ipv4.ip_unprivileged_port_start': '0' } as const;

/** Does a container of this network_mode get a network namespace of its own (not the host's, not another container's)? */
function ownNetwork(mode: string): boolean {
  return mode !== 'host' && !mode.startsWith('container:');
}

/** A namespace mode for the create request: absent when private (the engine's default). */
function namespaceMode<K extends string>(key: K, mode: string | undefined): Partial<Record<K, string>> {
  if (mode === undefined || mode === 'private') return {};
  return { [key]: mode } as Partial<Record<K, string>>;
}
