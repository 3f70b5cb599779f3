// The example stack (recipes/, plans/edge-processes.toml, artifacts/) as the installed agent runs it in a container:
// directory mode, its four processes, and what a test reads of them (the agent's status, each process's identity).
import type { DebianContainer } from './debian-container.js';
import { pollUntil } from './debian-container.js';

export const COMPONENTS = ['influxdb', 'api', 'telemetry', 'web'] as const;

/** /etc/keystone/agent.toml for the example: the agent's flags as keys (`keystone agent --config`). */
export const EXAMPLE_CONFIG = [
  'dir = "/srv/example"',
  'plan = "plans/edge-processes.toml"',
  'allow-unsigned = true',
  'log-format = "json"',
  '',
].join('\n');

/**
 * The example copied out of the mounted project (a snapshot: an edit in the working tree during the test is no new
 * revision), and `node` on PATH for its recipes, which run `node fake-….mjs`: Debian 12 has no Node ≥ 20, so the
 * test links the one the agent runs on (`node`: keystone-node's, the package's own, or Debian 13's) as
 * /usr/local/bin/node (a device running Node programs installs its own Node).
 */
export async function prepareExample(c: DebianContainer, node = '/usr/lib/keystone/node'): Promise<void> {
  await c.must(
    `rm -rf /srv/example && mkdir -p /srv/example && cp -r /src/recipes /src/plans /src/artifacts /srv/example/ && ln -sf ${node} /usr/local/bin/node`,
  );
}

export async function writeExampleConfig(c: DebianContainer): Promise<void> {
  await c.must(`cat > /etc/keystone/agent.toml <<'EOF'\n${EXAMPLE_CONFIG}EOF`);
}

export interface ComponentStatus {
  name: string;
  state: string;
  health: string;
  pid: number | null;
}

export interface StackStatus {
  agent?: { pid: number; version: string };
  components: ComponentStatus[];
}

/** `keystonectl status --json` (the API on 127.0.0.1:8080, the token from /var/lib/keystone); undefined while no agent answers. */
export async function stackStatus(c: DebianContainer): Promise<StackStatus | undefined> {
  const r = await c.exec('keystonectl status --json 2>/dev/null', 30_000);
  if (r.code !== 0) return undefined;
  const j = JSON.parse(r.stdout) as {
    agent?: StackStatus['agent'];
    revision?: { agent?: StackStatus['agent'] };
    components: ComponentStatus[];
  };
  return { agent: j.agent ?? j.revision?.agent, components: j.components };
}

/** Every component of the example runs, healthy, with a pid. */
export const isHealthy = (s: StackStatus): boolean =>
  COMPONENTS.every((n) =>
    s.components.some((x) => x.name === n && x.state === 'running' && x.health === 'healthy' && x.pid !== null),
  );

/** Polls until the example stack is healthy and `also` holds (e.g. a new agent answers). */
export function healthyStack(
  c: DebianContainer,
  what: string,
  also: (s: StackStatus) => boolean = () => true,
  timeoutMs = 90_000,
): Promise<StackStatus> {
  return pollUntil(what, timeoutMs, async () => {
    const s = await stackStatus(c);
    return s && isHealthy(s) && also(s) ? s : undefined;
  });
}

/**
 * Each component's process as `pid@start-time` (/proc/PID/stat field 22, in clock ticks since boot): the same pid
 * given to another process later is another identity. A process gone is `pid@gone`.
 */
export async function identities(c: DebianContainer, s: StackStatus): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const comp of s.components) {
    const stat = await c.exec(`cat /proc/${comp.pid}/stat`);
    const fields = stat.code === 0 ? stat.stdout.slice(stat.stdout.lastIndexOf(')') + 2).split(' ') : [];
    out[comp.name] = `${comp.pid}@${fields[19] ?? 'gone'}`;
  }
  return out;
}

/** Polls until no process of `ids` is left (a pid now held by another process counts as gone). */
export async function allGone(c: DebianContainer, ids: Record<string, string>, timeoutMs = 30_000): Promise<void> {
  await pollUntil(`the components ${Object.values(ids).join(', ')} to exit`, timeoutMs, async () => {
    const now = await identities(c, {
      components: Object.entries(ids).map(([name, id]) => ({
        name,
        state: '',
        health: '',
        pid: Number(id.split('@')[0]),
      })),
    });
    return Object.keys(ids).every((n) => now[n] !== ids[n]) ? true : undefined;
  });
}

/** The keystone unit's properties (`systemctl show`), for the tests under systemd. */
export async function unitProperties(c: DebianContainer): Promise<Record<string, string>> {
  const out = await c.must(
    'systemctl show -p ActiveState -p SubState -p MainPID -p NRestarts -p ExecMainStatus -p Result keystone.service',
  );
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

/**
 * Polls until the stack is healthy under the unit's main process (an agent other than pid `not`: a restarted one).
 * A miss throws what it saw, so that a timeout says which component was not healthy, and how.
 */
export function stackUnderUnit(
  c: DebianContainer,
  what: string,
  not?: string,
  timeoutMs = 90_000,
): Promise<{ s: StackStatus; mainPid: string }> {
  return pollUntil(what, timeoutMs, async () => {
    const mainPid = (await unitProperties(c)).MainPID!;
    if (mainPid === '0' || mainPid === not) throw new Error(`the unit's main pid is ${mainPid}`);
    const s = await stackStatus(c);
    if (!s) throw new Error(`no agent answered keystonectl status (main pid ${mainPid})`);
    if (!isHealthy(s) || (s.agent !== undefined && String(s.agent.pid) !== mainPid))
      throw new Error(
        `agent ${s.agent?.pid ?? '?'} (main pid ${mainPid}) shows ${s.components.map((x) => `${x.name} ${x.state}/${x.health}`).join(', ')}`,
      );
    return { s, mainPid };
  });
}

/**
 * Polls until systemd, PID 1 in the container, has finished booting: its state. `degraded` is a unit of the image
 * failing in a container (under qemu, those that need a mount namespace: debian-image.ts); what matters is that
 * systemd runs and starts units.
 */
export function systemdBooted(c: DebianContainer, timeoutMs = 60_000): Promise<string> {
  return pollUntil('systemd to finish booting in the container', timeoutMs, async () => {
    const state = (await c.exec('systemctl is-system-running')).stdout.trim();
    return state === 'running' || state === 'degraded' ? state : undefined;
  });
}
