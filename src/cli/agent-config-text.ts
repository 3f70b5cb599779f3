// The text of a first configuration file (`keystone init`): the keys the operator gave, and the others commented out
// with their defaults, grouped and explained, so that the file is where an operator learns what can be set.
import { isoTime } from '../core/iso-time.js';

export interface InitialConfig {
  /** Where the file goes (absolute): named in its header's commands. */
  file: string;
  /** Exactly one of repo and dir; paths are absolute (the file may move, the device's paths do not). */
  repo?: string;
  ref?: string;
  /** Where the device's reports go (`status-repo`), and the files holding the two tokens. */
  statusRepo?: string;
  statusTokenFile?: string;
  gitTokenFile?: string;
  dir?: string;
  plan?: string;
  device?: string;
  labels: readonly string[];
  trustedKeys: readonly string[];
  allowUnsigned: boolean;
  /** `require-ref = true`: only signatures made for the followed ref count. */
  requireRef?: boolean;
  /** `enrollment-key`: the operator keys device certificates are signed by (absolute). */
  enrollmentKeys?: readonly string[];
  /** `certificate`: this device's certificate, given locally (absolute). */
  certificate?: string;
  stateDir: string;
  /** The name the agent reports under when `device` is not set, for the comment that says so. */
  hostname: string;
  now: Date;
}

/** A TOML basic string: JSON's escapes are TOML's, except that TOML wants DEL escaped too. */
export const tomlString = (s: string) => JSON.stringify(s).replace(/\u007f/g, '\\u007f');

const tomlList = (xs: readonly string[]) => `[${xs.map(tomlString).join(', ')}]`;

/** `key = value  # comment`, or the same line commented out when the value is not set. */
function line(key: string, value: string | undefined, example: string, comment?: string): string {
  const text = value !== undefined ? `${key} = ${value}` : `# ${key} = ${example}`;
  return comment ? `${text.padEnd(52)} # ${comment}` : text;
}

function section(title: string): string {
  return `\n# --- ${title} ${'-'.repeat(Math.max(3, 100 - title.length))}`;
}

export function agentConfigText(c: InitialConfig): string {
  const out = [
    `# The configuration of this device's Keystone agent, written by keystone init at ${isoTime(c.now.getTime())}.`,
    `#   run the agent:     keystone agent --config ${c.file}`,
    `#   check the device:  keystone doctor --config ${c.file}`,
    '#',
    '# Every key is the `keystone agent` flag of the same name (keystone agent --help): a flag given on the command line',
    '# wins over this file, and a repeatable flag given there replaces the list here. Relative paths are taken from this',
    "# file's directory. Secrets never go in this file: it names the files that hold them (chmod 600).",
    section('Where the desired state comes from'),
  ];
  if (c.repo !== undefined) {
    out.push(
      '# A Git repository (an https URL, or a local path), followed on one ref.',
      line('repo', tomlString(c.repo), '"https://git.example.com/acme/edge.git"'),
      line('ref', c.ref !== undefined ? tomlString(c.ref) : undefined, '"main"'),
      line('poll', undefined, '"60s"', 'how often to look for a new commit (with jitter)'),
      line(
        'git-token-file',
        c.gitTokenFile !== undefined ? tomlString(c.gitTokenFile) : undefined,
        '"/etc/keystone/git-token"',
        'a token that may READ repo, on the first line',
      ),
      '',
      '# Where this device pushes its reports (Git notes, rollout refs): a repository of their own, so that the token',
      '# above only reads. A device that can push to repo could change what every device runs (docs/security.md).',
      line(
        'status-repo',
        c.statusRepo !== undefined ? tomlString(c.statusRepo) : undefined,
        '"https://git.example.com/acme/reports.git"',
      ),
      line(
        'status-token-file',
        c.statusTokenFile !== undefined ? tomlString(c.statusTokenFile) : undefined,
        '"/etc/keystone/status-token"',
        'a token that may push to status-repo',
      ),
    );
  } else {
    out.push(
      '# A plain directory, watched for changes: for development, never for a device in the field.',
      line('dir', tomlString(c.dir ?? ''), '"/srv/keystone-dev"'),
      line('settle', undefined, '"300ms"', 'how long a change must rest before it is a revision'),
    );
  }
  out.push(
    '',
    "# The plan this device runs; without it, the repository's fleet.toml chooses one by device name and labels.",
    line(
      'plan',
      c.plan !== undefined ? tomlString(c.plan) : undefined,
      '"plans/edge.toml"',
      'a path inside the repository',
    ),
    section('This device'),
    `# Its name in reports (keystone/<device>) and in fleet.toml's devices; without it, the host name (${c.hostname}).`,
    line('device', c.device !== undefined ? tomlString(c.device) : undefined, tomlString(c.hostname)),
    "# What fleet.toml's selectors match (KEY=VALUE). Labels never come from the repository.",
    line('label', c.labels.length ? tomlList(c.labels) : undefined, '["hw=pi4", "region=eu"]'),
    section('Trust'),
  );
  if (c.allowUnsigned) {
    out.push(
      '# DEVELOPMENT ONLY: every revision is applied without a signature check.',
      line('allow-unsigned', 'true', 'false'),
    );
  } else {
    out.push(
      '# The public keys whose signatures this device accepts (keystonectl keygen, minisign -G); never from the repository.',
      line('trusted-key', tomlList(c.trustedKeys), '["/etc/keystone/keys/release.pub"]'),
      line('threshold', undefined, '1', 'how many distinct trusted keys must have signed'),
      line('max-age', undefined, '"720h"', 'refuse a signed state older than this (a frozen mirror)'),
      line('max-clock-skew', undefined, '"5m"', 'refuse a signature dated further in the future'),
      line(
        'require-ref',
        c.requireRef ? 'true' : undefined,
        'true',
        'count only signatures made for the followed ref (keystonectl sign --ref main)',
      ),
    );
  }
  out.push(
    section('Device identity'),
    "# This device's own keys are made in state-dir/identity at its first start (keystone identity prints the public halves).",
    "# The operator's enrolment keys, which sign device certificates (keystonectl enroll): reports are checked against them.",
    line(
      'enrollment-key',
      c.enrollmentKeys?.length ? tomlList(c.enrollmentKeys) : undefined,
      '["/etc/keystone/keys/enroll.pub"]',
    ),
    line(
      'certificate',
      c.certificate !== undefined ? tomlString(c.certificate) : undefined,
      '"/etc/keystone/device.cert"',
      "this device's certificate; else devices/<device>.cert in the repository",
    ),
  );
  if (c.repo !== undefined)
    out.push(
      section('Reports and recovery (Git)'),
      line('status', undefined, '"git-notes"', 'git-notes and/or github (comma-separated), or none'),
      line('github-repo', undefined, '"acme/edge"', 'OWNER/REPO for the GitHub commit status API'),
      line('github-token-file', undefined, '"/etc/keystone/github-token"'),
      line('github-api', undefined, '"https://api.github.com"', 'Gitea and Forgejo serve the same API'),
      line('webhook-secret-file', undefined, '"/etc/keystone/webhook-secret"', "the GitHub webhook's HMAC secret"),
      line('on-failure', undefined, '"none"', '"rollback": back to the last revision that succeeded'),
      line('allow-history-rewrite', undefined, 'false', 'follow a force-push that rewrites history'),
    );
  out.push(
    section('The agent'),
    line('state-dir', tomlString(c.stateDir), '"/var/lib/keystone"', 'its SQLite state, API token, components'),
    line('listen', undefined, '"127.0.0.1:8080"', 'the HTTP API; "none" turns it off'),
    line('listen-public', undefined, 'false', 'true: allow an address beyond loopback'),
    line('socket', undefined, '"/run/keystone/api.sock"', 'the API on a Unix socket too'),
    line('dashboard', undefined, 'true', 'false: no web page at / (the API stays)'),
    line('concurrency', undefined, '2', 'components started at once; default: the CPUs'),
    line('grace', undefined, '"10s"', 'between SIGTERM and SIGKILL'),
    line('log-format', undefined, '"json"', 'default: pretty on a terminal, else json'),
    line('stop-on-exit', undefined, 'false', 'true: stop the components when the agent stops'),
    line(
      'window',
      undefined,
      '"sat,sun 02:00-04:00 Europe/Berlin"',
      "apply new revisions only then (a fleet target's window wins)",
    ),
    line('max-backoff', undefined, '"60s"', 'the cap of restart backoff'),
    line('crash-loop-limit', undefined, '10', 'restarts without a healthy spell before crash-looping'),
    line('healthy-spell', undefined, '"10m"', 'healthy this long gives the restart budget back'),
    line('log-max-bytes', undefined, '10485760', "a component log file's size before rotation"),
    line('log-keep', undefined, '5', 'rotated log files kept'),
    section('Device policy: what any recipe may have (off unless allowed here)'),
    line('allow-privileged', undefined, 'false'),
    line('allow-host-namespaces', undefined, 'false'),
    line('allow-root', undefined, 'false', 'process recipes running as uid 0'),
    line('allow-mount', undefined, '["/srv/data"]', 'host paths containers may bind-mount (absolute)'),
    line('allow-capability', undefined, '["CAP_NET_BIND_SERVICE"]'),
    line('allow-device', undefined, '["/dev/ttyUSB0"]'),
    line('allow-agent-update', undefined, 'true', 'install the agent version fleet.toml [agent] names'),
  );
  return out.join('\n') + '\n';
}
