// What the device in the walkthrough's container shows, tested by a JavaScript expression:
//   node examples/agent-update/device.mjs [--raw] CONTAINER EXPRESSION
// prints the expression's value as JSON (--raw: a string as it is) and exits 0 when it is truthy, 1 when not, 2 while
// no agent answers.
// In scope:
//   status      `keystonectl status --json` (revision, components)
//   revision    the applied commit (status.revision.id)
//   agent       status.revision.agent: { pid, version, update? } (update: { state, version, commit?, reason? })
//   pids        { component name: pid }
//   healthy     every component of the example running and healthy, with a pid
//   history     `keystonectl history --json`'s entries, newest first
//   outcome(c)  the outcome of the newest history entry for commit c (undefined if none)
//   home        the agent's update files in /var/lib/keystone-agent: { trial, failed } (key=value objects or null),
//               current (where the `current` link points, or null)
//   mainPid     the keystone unit's main pid (systemctl show), as a number
import { execFileSync } from 'node:child_process';
import process from 'node:process';

const args = process.argv.slice(2);
const raw = args[0] === '--raw' && args.shift() !== undefined;
const [container, expression] = args;
if (!container || !expression) {
  process.stderr.write('usage: device.mjs [--raw] CONTAINER EXPRESSION\n');
  process.exit(2);
}
const COMPONENTS = ['influxdb', 'api', 'telemetry', 'web'];

function inContainer(script) {
  return execFileSync('docker', ['exec', container, 'sh', '-c', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
}

function keyValues(text) {
  if (text === '') return null;
  return Object.fromEntries(text.split('\n').filter((l) => l.indexOf('=') > 0).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

let status;
let entries;
try {
  status = JSON.parse(inContainer('keystonectl status --json 2>/dev/null'));
  entries = JSON.parse(inContainer('keystonectl history --json --limit 50 2>/dev/null')).entries ?? [];
} catch {
  process.stdout.write('null\n');
  process.exit(2);
}
const file = (name) => inContainer(`cat /var/lib/keystone-agent/${name} 2>/dev/null || true`);
const home = {
  trial: keyValues(file('trial')),
  failed: keyValues(file('failed')),
  current: inContainer('readlink /var/lib/keystone-agent/current 2>/dev/null || true').trim() || null,
};
const components = status.components ?? [];
const scope = {
  status,
  revision: status.revision?.id ?? null,
  agent: status.revision?.agent ?? null,
  pids: Object.fromEntries(components.map((c) => [c.name, c.pid])),
  healthy: COMPONENTS.every((n) => components.some((c) => c.name === n && c.state === 'running' && c.health === 'healthy' && c.pid !== null)),
  history: entries,
  outcome: (commit) => entries.find((e) => typeof e.revision === 'string' && commit && e.revision.includes(commit))?.outcome,
  home,
  mainPid: Number(/MainPID=(\d+)/.exec(inContainer('systemctl show -p MainPID keystone.service'))?.[1] ?? 0),
};
const value = new Function(...Object.keys(scope), `return (${expression});`)(...Object.values(scope));
process.stdout.write(`${raw && typeof value === 'string' ? value : JSON.stringify(value ?? null)}\n`);
process.exit(value ? 0 : 1);
