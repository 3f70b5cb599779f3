// `keystonectl fleet status` of a commit whose fleet.toml names an agent version (SPEC §17) with a [rollout]: a real
// repository, the devices' notes written by the real Git notes reporter with the `agent=` field their agents send
// (and one older agent's without it), read as a local path. The devices grouped by agent version, and per wave how
// many run the version the file names (a target with its own [agent] counted apart), in text and in --json.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusContext, type CommitState } from '../../src/report/commit-status.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { runCtl } from '../support/cli-run.js';
import { gitIn } from '../support/git-env.js';

const T0 = Date.parse('2026-12-05T07:00:00Z');
const min = 60_000;
const git = gitIn;
const SHA = 'ab'.repeat(32);

const FLEET_TOML = `[[targets]]
name = "gateways"
devices = ["gw-1", "gw-2", "gw-3"]
plan = "plans/edge.toml"

[[targets]]
name = "lab"
devices = ["lab-1"]
plan = "plans/edge.toml"
agent = { version = "0.3.0-rc.1", packages = { amd64 = { uri = "packages/keystone_0.3.0-rc.1_amd64.deb", sha256 = "${SHA}" } } }

[agent]
version = "0.2.0"
packages.amd64 = { uri = "packages/keystone_0.2.0_amd64.deb", sha256 = "${SHA}" }

[rollout]
waves = [
  { name = "canary", devices = ["gw-1", "lab-1"] },
  { name = "everyone", percent = 100 },
]
`;

/** As the device's agent writes it: target= and wave= in the fields, its version in the details (agent=). */
async function report(
  dir: string,
  device: string,
  c: string,
  state: CommitState,
  at: number,
  fields: Record<string, string>,
  agent?: string,
): Promise<void> {
  await new GitNotesReporter({ repository: dir, now: () => at }).deliver({
    commit: c,
    state,
    description: `${state}`,
    context: statusContext(device),
    at,
    fields,
    ...(agent && { details: { agent } }),
  });
}

let root: string;
let dir: string;
let tip: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-fleet-agent-'));
  dir = join(root, 'work');
  mkdirSync(join(dir, 'plans'), { recursive: true });
  await git(dir, ['init', '--quiet', '--initial-branch=main']);
  writeFileSync(join(dir, 'fleet.toml'), FLEET_TOML);
  writeFileSync(join(dir, 'plans', 'edge.toml'), '# edge\n');
  await git(dir, ['add', '.']);
  const date = `${Math.floor((T0 - 10 * min) / 1000)} +0000`;
  await git(dir, ['commit', '--quiet', '-m', 'agent 0.2.0'], { GIT_COMMITTER_DATE: date, GIT_AUTHOR_DATE: date });
  tip = await git(dir, ['rev-parse', 'HEAD']);
  // The canary took the new agent (0.2.0 reports the success), the lab its own version; the rest still run 0.1.0,
  // held, and gw-3 is an agent from before versions were reported.
  await report(dir, 'gw-1', tip, 'success', T0, { target: 'gateways', wave: 'canary' }, '0.2.0');
  await report(dir, 'lab-1', tip, 'success', T0, { target: 'lab', wave: 'canary' }, '0.3.0-rc.1');
  await report(dir, 'gw-2', tip, 'pending', T0 + min, { target: 'gateways', wave: 'everyone' }, '0.1.0');
  await report(dir, 'gw-3', tip, 'pending', T0 + min, { target: 'gateways', wave: 'everyone' });
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const local = (args: string[]) => runCtl(['fleet', 'status', '--repo', dir, ...args], '/', { now: () => T0 + 5 * min });

describe('keystonectl fleet status: agent versions', () => {
  it('text: the devices by agent version, and per wave how many run the version fleet.toml names for them', async () => {
    const r = await local([]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      '\n\nagent versions: 0.3.0-rc.1 ×1, 0.2.0 ×1, 0.1.0 ×1, unknown ×1 (wave canary: 1 of 1 on 0.2.0; wave canary: 1 of 1 on 0.3.0-rc.1; wave everyone: 0 of 2 on 0.2.0)\n\nrollout of ',
    );
  });

  it('--json: agentVersions and agentUpdate beside the existing keys', async () => {
    const r = await local(['--json']);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(Object.keys(j)).toEqual([
      'commit',
      'ref',
      'fleetFile',
      'silentAfter',
      'silentSince',
      'silenceCounts',
      'targets',
      'devices',
      'agentVersions',
      'agentUpdate',
      'rollout',
    ]);
    expect(j.commit).toBe(tip);
    expect(j.agentVersions).toEqual({ '0.3.0-rc.1': 1, '0.2.0': 1, '0.1.0': 1, unknown: 1 });
    expect(j.agentUpdate).toEqual([
      { wave: 'canary', version: '0.2.0', devices: 1, on: 1 },
      { wave: 'canary', version: '0.3.0-rc.1', devices: 1, on: 1 },
      { wave: 'everyone', version: '0.2.0', devices: 2, on: 0 },
    ]);
  });

  it('--format markdown: one sentence under the summary', async () => {
    const r = await local(['--format', 'markdown']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      '\n\nAgent versions: 0.3.0-rc.1 ×1, 0.2.0 ×1, 0.1.0 ×1, unknown ×1 (wave canary: 1 of 1 on 0.2.0; wave canary: 1 of 1 on 0.3.0-rc.1; wave everyone: 0 of 2 on 0.2.0).\n\n',
    );
  });
});
