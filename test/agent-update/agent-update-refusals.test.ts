// Bad input in [agent] through the agent's own loop (SPEC §17, "Bad input": a package whose sha256 does not match, of
// another architecture, unsigned, or older than the running version without allow_downgrade = true): refused, the
// commit reported `error`, nothing changes. As for any refusal on the device (a wrong sha256 is the model), the whole
// revision is refused: its plan is not applied either, the components keep running as they were, the device keeps
// the revision it ran; nothing is staged, no trial is written, `current` does not move, systemctl is not called.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentHome, readTrial, type AgentHome } from '../../src/agent-update/agent-home.js';
import { instancesOf } from '../../src/agent-update/agent-update-setup.js';
import type { Agent } from '../../src/agent/agent.js';
import type { CommitStatus } from '../../src/report/commit-status.js';
import { needs } from '../support/requirements.js';
import { ARCH, fakeDeb } from './fake-deb.js';
import { LoopHarness } from './loop-harness.js';
import { signer, type Signer } from './signing.js';

const r = needs('dpkg-deb');
const h = new LoopHarness();
const keys: Signer[] = [];
afterEach(async () => {
  await h.cleanup();
  for (const k of keys.splice(0)) k.cleanup();
});

const [R1, R2, R3, R4, R5] = ['1', '2', '3', '4', '5'].map((d) => d.repeat(40)) as [
  string,
  string,
  string,
  string,
  string,
];

/** What "nothing changes" means on the device after the refusal of `commit`, and that it was reported `error`. */
function expectRefused(o: {
  a: Agent;
  sent: CommitStatus[];
  home: AgentHome;
  calls: string[][];
  commit: string;
  code: string;
  pid: string;
  runs: string;
}): void {
  const row = o.a.store.history({ limit: 1 })[0];
  expect(row).toMatchObject({ revision: o.commit, outcome: 'rejected' });
  expect(row?.summary).toMatch(new RegExp(`^${o.code}: `));
  expect(o.sent.filter((s) => s.commit === o.commit).map((s) => s.state)).toEqual(['error']);
  expect(o.sent.at(-1)?.description).toContain(o.code);
  // The components as they ran, the revision the device ran.
  expect(instancesOf(o.a.store).svc).toBe(o.pid);
  expect(o.a.store.appliedRevision()?.id).toBe(o.runs);
  // Nothing staged or switched.
  expect(readTrial(o.home)).toBeUndefined();
  expect(existsSync(o.home.current)).toBe(false);
  expect(existsSync(o.home.trial)).toBe(false);
  expect(o.calls).toEqual([]);
}

describe.skipIf(r.skip)(r.title('[agent] refusals through the agent loop'), () => {
  it('a wrong sha256, a package of another architecture, an older version without allow_downgrade: each `error`, nothing changes', async () => {
    const work = h.temp('ks-refuse-');
    const stateDir = h.temp('ks-refuse-state-');
    const home = agentHome(join(work, 'home'));
    const key = await signer();
    keys.push(key);
    const calls: string[][] = [];
    const { a, sent } = await h.start({ version: '0.2.0', stateDir, home, trust: key.trust, calls });
    const r1 = h.repo();
    await key.sign(r1.root);
    a.offer({ id: R1, origin: 'commit', source: 'test', reader: r1 });
    await a.idle();
    const pid = instancesOf(a.store).svc!;
    expect(pid).toMatch(/^\d+$/);
    expect(sent.map((s) => s.state)).toEqual(['pending', 'success']);

    // Each commit also changes svc (1.1.0): refused as a whole, svc is not restarted into it.
    const offer = async (id: string, agent: { version: string; uri: string; sha256: string }) => {
      const reader = h.repo({ agent, svcVersion: '1.1.0' });
      await key.sign(reader.root);
      a.offer({ id, origin: 'commit', source: 'test', reader });
      await a.idle();
    };
    const v3 = fakeDeb(work, { version: '0.3.0' });
    await offer(R2, { version: '0.3.0', uri: v3.uri, sha256: 'f'.repeat(64) });
    expectRefused({ a, sent, home, calls, commit: R2, code: 'KS_AGENT_PACKAGE_DIGEST', pid, runs: R1 });

    const other = fakeDeb(work, { version: '0.3.0', arch: ARCH === 'arm64' ? 'amd64' : 'arm64' });
    await offer(R3, { version: '0.3.0', uri: other.uri, sha256: other.sha256 });
    expectRefused({ a, sent, home, calls, commit: R3, code: 'KS_AGENT_PACKAGE_INVALID', pid, runs: R1 });
    expect(a.store.history({ limit: 1 })[0]?.summary).toMatch(/ is built for /);

    const older = fakeDeb(work, { version: '0.1.0' });
    await offer(R4, { version: '0.1.0', uri: older.uri, sha256: older.sha256 });
    expectRefused({ a, sent, home, calls, commit: R4, code: 'KS_AGENT_DOWNGRADE', pid, runs: R1 });
    // Refused before anything was fetched or unpacked: no version directory either.
    expect(existsSync(home.versions)).toBe(false);

    // The package's Debian Version is not [agent] version's (a 0.3.0 package relabelled): refused at staging.
    const relabelled = fakeDeb(work, { version: '0.3.0', debVersion: '0.2.9' });
    await offer(R5, { version: '0.3.0', uri: relabelled.uri, sha256: relabelled.sha256 });
    expectRefused({ a, sent, home, calls, commit: R5, code: 'KS_AGENT_PACKAGE_VERSION', pid, runs: R1 });
  });

  it('an unsigned revision (--allow-unsigned, with --allow-agent-update) naming another agent version: KS_AGENT_UNSIGNED, `error`, nothing changes; one that names the running version is applied', async () => {
    const work = h.temp('ks-refuse-');
    const stateDir = h.temp('ks-refuse-state-');
    const home = agentHome(join(work, 'home'));
    const calls: string[][] = [];
    const { a, sent } = await h.start({ version: '0.1.0', stateDir, home, trust: { unsigned: true }, calls });
    a.offer({ id: R1, origin: 'commit', source: 'test', reader: h.repo() });
    await a.idle();
    const pid = instancesOf(a.store).svc!;
    expect(pid).toMatch(/^\d+$/);

    // A good package with its right sha256: what is refused is the revision's lack of a checked signature.
    const v2 = fakeDeb(work, { version: '0.2.0' });
    a.offer({
      id: R2,
      origin: 'commit',
      source: 'test',
      reader: h.repo({ agent: { version: '0.2.0', ...v2 }, svcVersion: '1.1.0' }),
    });
    await a.idle();
    expectRefused({ a, sent, home, calls, commit: R2, code: 'KS_AGENT_UNSIGNED', pid, runs: R1 });
    expect(existsSync(home.versions)).toBe(false);

    // [agent] naming the version that runs asks nothing of the agent: the revision is applied (svc goes to 1.1.0).
    a.offer({
      id: R3,
      origin: 'commit',
      source: 'test',
      reader: h.repo({ agent: { version: '0.1.0', ...v2 }, svcVersion: '1.1.0' }),
    });
    await a.idle();
    expect(a.store.history({ limit: 1 })[0]).toMatchObject({ revision: R3, outcome: 'success' });
    expect(sent.filter((s) => s.commit === R3).map((s) => s.state)).toEqual(['pending', 'success']);
    expect(instancesOf(a.store).svc).not.toBe(pid);
    expect(calls).toEqual([]);
    expect(readTrial(home)).toBeUndefined();
  });
});
