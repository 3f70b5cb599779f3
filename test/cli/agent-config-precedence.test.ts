// What the agent runs with when given `--config FILE`: the command line over the file over the defaults, relative
// paths of the file taken from its directory, and a complete file with every key. parseAgentOptions is what
// `keystone agent` and `keystone doctor` call; real files in a temp directory.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConfigError } from '../../src/cli/agent-config-error.js';
import { CONFIG_RULES } from '../../src/cli/agent-config-rules.js';
import { parseAgentConfig, readAgentConfig } from '../../src/cli/agent-config.js';
import { AGENT_OPTIONS, parseAgentOptions } from '../../src/cli/agent-options.js';
import type { CliIo } from '../../src/cli/io.js';
import { runCtl } from '../support/cli-run.js';

let root: string;
/** Where the configuration files live: /etc/keystone of this test. */
let etc: string;
/** The agent's working directory: somewhere else, so that taking a path from it would show. */
let cwd: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-config-merge-'));
  etc = join(root, 'etc', 'keystone');
  cwd = join(root, 'elsewhere');
  mkdirSync(join(etc, 'keys'), { recursive: true });
  mkdirSync(cwd);
  mkdirSync(join(root, 'repo'));
  for (const name of ['release', 'ops', 'enroll']) {
    const r = await runCtl(['keygen', '--out', join(etc, 'keys', name), '--no-password'], root);
    expect(r.code, r.stderr).toBe(0);
  }
  for (const f of ['git-token', 'github-token', 'webhook-secret'])
    writeFileSync(join(etc, f), `${f}-value\n`, { mode: 0o600 });
  writeFileSync(join(etc, 'device.cert'), 'keystone-certificate = 1\n');
  // Stand-ins for the engines' sockets (docker-socket, podman-socket must name a socket that is there).
  for (const name of ['docker.sock', 'podman.sock']) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(etc, name), resolve));
    sockets.push(server);
  }
});
const sockets: Server[] = [];
afterAll(async () => {
  await Promise.all(sockets.map((s) => new Promise((resolve) => s.close(resolve))));
  rmSync(root, { recursive: true, force: true });
});

const io = (env: Record<string, string> = {}): CliIo => ({
  stdout: { write: () => true },
  stderr: { write: () => true },
  cwd,
  env,
});

function writeConfig(text: string, name = 'agent.toml'): string {
  const file = join(etc, name);
  writeFileSync(file, text);
  return file;
}

/** Every key but dir (which excludes repo), as the documentation shows it; ETC stands for the configuration's directory. */
const COMPLETE = `
repo = "https://git.example.com/acme/edge.git"
ref = "main"
poll = "60s"
git-token-file = "ETC/git-token"
plan = "plans/edge.toml"
device = "edge-7"
label = ["hw=pi4", "region=eu"]
trusted-key = ["ETC/keys/release.pub", "ETC/keys/ops.pub"]
threshold = 1
max-age = "720h"
max-clock-skew = "5m"
allow-unsigned = false
require-ref = true
status = "git-notes,github"
status-repo = "https://git.example.com/acme/reports.git"
status-token-file = "ETC/git-token"
github-repo = "acme/edge"
github-token-file = "ETC/github-token"
github-api = "https://api.github.com"
webhook-secret-file = "ETC/webhook-secret"
on-failure = "rollback"
allow-history-rewrite = false
state-dir = "/var/lib/keystone"
listen = "0.0.0.0:8080"
listen-public = true
socket = "/run/keystone/api.sock"
concurrency = 2
grace = "10s"
log-format = "json"
stop-on-exit = false
settle = "300ms"
max-backoff = "60s"
crash-loop-limit = 10
healthy-spell = "10m"
log-max-bytes = 10485760
log-keep = 5
allow-privileged = false
allow-host-namespaces = false
allow-root = false
allow-mount = ["/srv/data"]
allow-capability = ["CAP_NET_BIND_SERVICE"]
allow-device = ["/dev/ttyUSB0"]
allow-agent-update = true
window = "sat,sun 02:00-04:00 Europe/Berlin"
docker-socket = "ETC/docker.sock"
podman-socket = "ETC/podman.sock"
dashboard = true
enrollment-key = ["ETC/keys/enroll.pub"]
certificate = "ETC/device.cert"
`;

describe('a complete configuration', () => {
  it('has a key for every flag of the agent, and loads without a problem', () => {
    const keys = [...COMPLETE.matchAll(/^([a-z-]+) = /gm)].map((m) => m[1]);
    expect([...keys, 'dir'].sort()).toEqual(Object.keys(AGENT_OPTIONS).sort());
    const loaded = readAgentConfig(writeConfig(COMPLETE.replaceAll('ETC', etc)));
    expect(loaded.diagnostics).toEqual([]);
    expect(loaded.values.concurrency).toBe('2');
    expect(loaded.values['trusted-key']).toEqual([join(etc, 'keys/release.pub'), join(etc, 'keys/ops.pub')]);
  });

  it('takes every key as the flag of the same name takes it: a list for a repeatable flag, a boolean for a switch', () => {
    expect(Object.keys(CONFIG_RULES).sort()).toEqual(Object.keys(AGENT_OPTIONS).sort());
    for (const [name, option] of Object.entries(AGENT_OPTIONS) as [
      keyof typeof AGENT_OPTIONS,
      { type: string; multiple?: boolean },
    ][]) {
      const at = () => ({ path: [name], dir: etc, problem: () => undefined });
      if (option.type === 'boolean') expect(CONFIG_RULES[name](true, at), name).toBe(true);
      else if (option.multiple) expect(CONFIG_RULES[name]('x', at), name).toBeUndefined();
      else expect(CONFIG_RULES[name](['x'], at), name).toBeUndefined();
    }
  });

  it('the development form: dir instead of repo', () => {
    const loaded = parseAgentConfig(
      join(etc, 'dev.toml'),
      'dir = "../../repo"\nallow-unsigned = true\nsettle = "100ms"\n',
    );
    expect(loaded.diagnostics).toEqual([]);
    expect(loaded.values.dir).toBe(join(root, 'repo'));
  });
});

describe('precedence: the command line, then the file, then the defaults', () => {
  it('a flag given on the command line wins over the file', () => {
    const file = writeConfig(
      `repo = "https://git.example.com/acme/edge.git"\ntrusted-key = ["keys/release.pub"]\npoll = "30s"\nconcurrency = "3"\n`,
    );
    const { values, configFile } = parseAgentOptions(['--config', file, '--poll', '5s'], io());
    expect(configFile).toBe(file);
    expect(values.poll).toBe('5s');
    expect(values.concurrency).toBe('3');
  });

  it("a repeatable flag on the command line replaces the file's list, it does not add to it", () => {
    const file = writeConfig(
      `dir = "/srv"\nallow-unsigned = true\nlabel = ["role=gateway", "site=lab"]\nallow-mount = ["/srv/a", "/srv/b"]\n`,
    );
    const { values } = parseAgentOptions(['--config', file, '--label', 'site=home'], io());
    expect(values.label).toEqual(['site=home']);
    expect(values['allow-mount']).toEqual(['/srv/a', '/srv/b']);
  });

  it('defaults fill what neither gives; the file wins over a default', () => {
    const file = writeConfig(`dir = "/srv"\nallow-unsigned = true\ngrace = "30s"\nstop-on-exit = true\n`);
    const { values } = parseAgentOptions(['--config', file], io());
    expect(values.grace).toBe('30s');
    expect(values['stop-on-exit']).toBe(true);
    expect(values['state-dir']).toBe('/var/lib/keystone');
    expect(values.settle).toBe('300ms');
    expect(values['on-failure']).toBe('none');
    expect(values.poll).toBeUndefined();
  });

  it('--no-FLAG turns off a switch the file turns on', () => {
    const file = writeConfig(`dir = "/srv"\nallow-unsigned = true\nstop-on-exit = true\n`);
    expect(parseAgentOptions(['--config', file, '--no-stop-on-exit'], io()).values['stop-on-exit']).toBe(false);
  });

  it("a source or a trust choice on the command line replaces the file's choice", () => {
    const file = writeConfig(`repo = "https://git.example.com/acme/edge.git"\ntrusted-key = ["keys/release.pub"]\n`);
    const { values } = parseAgentOptions(['--config', file, '--dir', 'dev', '--allow-unsigned'], io());
    expect(values.dir).toBe('dev');
    expect(values.repo).toBeUndefined();
    expect(values['allow-unsigned']).toBe(true);
    expect(values['trusted-key']).toBeUndefined();
    // `--no-allow-unsigned` makes no choice: the file's keys stay.
    expect(parseAgentOptions(['--config', file, '--no-allow-unsigned'], io()).values['trusted-key']).toEqual([
      join(etc, 'keys/release.pub'),
    ]);
  });

  it('an integer may be written as a number or as a string', () => {
    const a = parseAgentOptions(
      ['--config', writeConfig(`dir = "/srv"\nallow-unsigned = true\nconcurrency = 2\n`)],
      io(),
    ).values;
    const b = parseAgentOptions(
      ['--config', writeConfig(`dir = "/srv"\nallow-unsigned = true\nconcurrency = "2"\n`)],
      io(),
    ).values;
    expect(a.concurrency).toBe('2');
    expect(b.concurrency).toBe('2');
  });

  it('is explicit: KEYSTONE_CONFIG names nothing', () => {
    const file = writeConfig(`dir = "/srv"\nallow-unsigned = true\ngrace = "30s"\n`);
    const r = parseAgentOptions(['--dir', '/srv', '--allow-unsigned'], io({ KEYSTONE_CONFIG: file }));
    expect(r.configFile).toBeUndefined();
    expect(r.values.grace).toBe('10s');
  });

  it('an invalid file throws AgentConfigError with every diagnostic (for doctor to show as data)', () => {
    const file = writeConfig(`dir = "/srv"\nallow-unsigned = true\ngrace = "long"\n`);
    let err: unknown;
    try {
      parseAgentOptions(['--config', file], io());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AgentConfigError);
    expect((err as AgentConfigError).diagnostics).toEqual([
      expect.objectContaining({ code: 'KS_BAD_DURATION', file, path: 'grace', line: 3 }),
    ]);
  });
});

describe("relative paths in the file are taken from the file's directory; on the command line, from the working directory", () => {
  it('every path key', () => {
    const file = writeConfig(
      'dir = "../../repo"\nstate-dir = "state"\nsocket = "run/api.sock"\ntrusted-key = ["keys/release.pub", "./keys/ops.pub"]\nthreshold = 2\n',
    );
    const { values } = parseAgentOptions(['--config', `../etc/keystone/agent.toml`], io());
    expect(values.dir).toBe(join(root, 'repo'));
    expect(values['state-dir']).toBe(join(etc, 'state'));
    expect(values.socket).toBe(join(etc, 'run/api.sock'));
    expect(values['trusted-key']).toEqual([join(etc, 'keys/release.pub'), join(etc, 'keys/ops.pub')]);
    expect(readFileSync(file, 'utf8')).toContain('state-dir = "state"');
    // A flag keeps its own text: the agent takes it from its working directory, as without a file.
    expect(parseAgentOptions(['--config', file, '--state-dir', 'here'], io()).values['state-dir']).toBe('here');
  });

  it('secret files, a local repository and the reports repository; the plan stays a path inside the repository', () => {
    const file = writeConfig(
      'repo = "../../repo"\nstatus-repo = "file:///srv/reports"\nplan = "plans/edge.toml"\ntrusted-key = ["keys/release.pub"]\n' +
        'git-token-file = "git-token"\ngithub-token-file = "./github-token"\nwebhook-secret-file = "webhook-secret"\n',
    );
    const { values } = parseAgentOptions(['--config', file], io());
    expect(values.repo).toBe(join(root, 'repo'));
    expect(values['status-repo']).toBe('/srv/reports');
    expect(values.plan).toBe('plans/edge.toml');
    expect(values['git-token-file']).toBe(join(etc, 'git-token'));
    expect(values['github-token-file']).toBe(join(etc, 'github-token'));
    expect(values['webhook-secret-file']).toBe(join(etc, 'webhook-secret'));
  });

  it('an https repository stays a URL', () => {
    const file = writeConfig('repo = "https://git.example.com/acme/edge.git"\nallow-unsigned = true\n');
    expect(parseAgentOptions(['--config', file], io()).values.repo).toBe('https://git.example.com/acme/edge.git');
  });
});
