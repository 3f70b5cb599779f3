// `[agent]` in fleet.toml (SPEC §17): the version a fleet runs and its packages; bad input named with its TOML path
// and line; a target's own table replaces the fleet's for its devices.
import { describe, expect, it } from 'vitest';
import { agentSectionFor, debArchOf } from '../../src/core/agent-section.js';
import { parseFleet, selectTarget } from '../../src/core/fleet.js';

const SHA = 'ab'.repeat(32);
const parsed = (text: string) => parseFleet('fleet.toml', text);
const problems = (text: string) => parsed(text).diagnostics.map((d) => ({ code: d.code, path: d.path, line: d.line }));

const FLEET = `
[agent]
version = "0.2.0"
[agent.packages.arm64]
uri = "https://downloads.example.com/keystone_0.2.0_arm64.deb"
sha256 = "${SHA}"
[agent.packages.amd64]
uri = "packages/keystone_0.2.0_amd64.deb"
sha256 = "${SHA}"

[[targets]]
name = "canary"
devices = ["edge-1"]
plan = "plans/edge.toml"
agent = { version = "0.3.0-rc.1", deadline = "90s", packages = { armhf = { uri = "file:///srv/keystone.deb", sha256 = "${SHA}" } } }

[[targets]]
name = "rest"
selector = {}
plan = "plans/edge.toml"
`;

describe('[agent] in fleet.toml', () => {
  it('reads the version, the deadline (5m by default) and a package per architecture; a target may carry its own', () => {
    const p = parsed(FLEET);
    expect(p.diagnostics).toEqual([]);
    const fleet = p.fleet!;
    expect(fleet.agent).toEqual({
      version: '0.2.0',
      deadline: 300_000,
      allow_downgrade: false,
      packages: {
        arm64: { uri: 'https://downloads.example.com/keystone_0.2.0_arm64.deb', sha256: SHA },
        amd64: { uri: 'packages/keystone_0.2.0_amd64.deb', sha256: SHA },
      },
    });
    const canary = selectTarget(fleet, 'edge-1', {})!.target;
    expect(agentSectionFor(fleet, canary)).toMatchObject({
      version: '0.3.0-rc.1',
      deadline: 90_000,
      packages: { armhf: { uri: 'file:///srv/keystone.deb' } },
    });
    expect(agentSectionFor(fleet, selectTarget(fleet, 'edge-2', {})!.target)?.version).toBe('0.2.0');
    expect(agentSectionFor({}, selectTarget(fleet, 'edge-2', {})!.target)).toBeUndefined();
  });

  it('names bad input with its path and line: a digest, a version, a duration, an architecture, where a package is', () => {
    expect(problems(`[agent]\nversion = "0.2"\npackages = {}\n`)).toEqual([
      { code: 'KS_BAD_SEMVER', path: 'agent.version', line: 2 },
    ]);
    expect(problems(`[agent]\nversion = "0.2.0"\n[agent.packages.amd64]\nuri = "x.deb"\nsha256 = "abc"\n`)).toEqual([
      { code: 'KS_AGENT_PACKAGE_DIGEST', path: 'agent.packages.amd64.sha256', line: 5 },
    ]);
    expect(problems(`[agent]\nversion = "0.2.0"\ndeadline = "soon"\npackages = {}\n`)).toEqual([
      { code: 'KS_BAD_DURATION', path: 'agent.deadline', line: 3 },
    ]);
    expect(
      problems(`[agent]\nversion = "0.2.0"\n[agent.packages.i386]\nuri = "x.deb"\nsha256 = "${SHA}"\n`),
    ).toMatchObject([{ code: 'KS_UNKNOWN_KEY', path: 'agent.packages.i386' }]);
    expect(
      problems(`[agent]\nversion = "0.2.0"\n[agent.packages.amd64]\nuri = "../outside.deb"\nsha256 = "${SHA}"\n`),
    ).toEqual([{ code: 'KS_PATH_ESCAPE', path: 'agent.packages.amd64.uri', line: 4 }]);
    expect(
      problems(`[agent]\nversion = "0.2.0"\n[agent.packages.amd64]\nuri = "ftp://host/x.deb"\nsha256 = "${SHA}"\n`),
    ).toEqual([{ code: 'KS_ARTIFACT_BAD_URI', path: 'agent.packages.amd64.uri', line: 4 }]);
    expect(problems(`[agent]\nversion = "0.2.0"\n`)).toMatchObject([
      { code: 'KS_MISSING_FIELD', path: 'agent.packages' },
    ]);
    expect(
      problems(
        `[[targets]]\nname = "t"\nselector = {}\nplan = "plans/p.toml"\nagent = { version = "1.0.0", packages = { amd64 = { uri = "/abs.deb", sha256 = "${SHA}" } } }\n`,
      ),
    ).toMatchObject([{ code: 'KS_PATH_ESCAPE', path: 'targets[0].agent.packages.amd64.uri', line: 5 }]);
  });

  it('names this machine as Debian does', () => {
    expect([debArchOf('x64'), debArchOf('arm64'), debArchOf('arm'), debArchOf('ia32')]).toEqual([
      'amd64',
      'arm64',
      'armhf',
      undefined,
    ]);
  });
});
