// Device identity (SPEC §8, §14, §15; issue 29) through real agents over a real Git smart-HTTP server: three enrolled
// devices (canary c1; d2 and d3 in the wave after it), each signing its reports with the key it made at its first
// start. They share the push token of the reports repository, so whoever holds d3 can write anything there: here
// d3's token (and d3's own key) is used to forge the canary's success — unsigned, signed with d3's key, and c1's own
// signature of another commit replayed — in rollout refs and in c1's notes, then failures of c1, of d2 and of a device
// nobody enrolled. None of it counts: the later wave stays held, saying why, the fleet view shows the forgeries as
// forged (with what they claimed) beside verified honest reports, and the gate opens only on the canary's own success.
// Then a revocation, a reinstalled device with a new key before and after it is enrolled again, and the reports of
// earlier agents (no signature): shown unverified, and counted again where the fleet does not require enrolment.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolloutRef } from '../../src/report/rollout-refs.js';
import { gitIn } from '../support/git-env.js';
import { EnrolledFleet, signerOf, type DeviceIdentity, type FleetStatusJson } from '../support/enrolled-fleet.js';
import { sleeper } from '../support/stack-fixture.js';

const BAKE_MS = 1000;
const fleetToml = (extra = '') => `[[targets]]
name = "all"
selector = {}
plan = "plans/stack.toml"

[rollout]
waves = [
  { name = "canary", devices = ["c1"] },
  { name = "everyone", percent = 100 },
]
bake = "1s"
min_success = 1
abort_failure_percent = 0
${extra}`;

const DEVICES = ['c1', 'd2', 'd3'];
const LATER = ['d2', 'd3'];

let f: EnrolledFleet;
const id: Record<string, DeviceIdentity> = {};

const deviceIn = (view: FleetStatusJson, device: string) => {
  const d = view.devices.find((x) => x.device === device);
  if (!d) throw new Error(`${device} is not in the fleet view: ${JSON.stringify(view.devices)}`);
  return d;
};
const notCountedOf = (view: FleetStatusJson) =>
  (view.rollout?.notCounted ?? [])
    .map((n) => `${n.device} ${n.wave} ${n.state} ${n.verdict}: ${n.reason ?? ''}`)
    .sort();

beforeAll(async () => {
  f = await EnrolledFleet.create([sleeper('a')]);
  f.fleetToml = fleetToml();
  for (const d of DEVICES) {
    id[d] = await f.install(d);
    await f.enrol(d);
  }
});

afterAll(async () => {
  await f?.cleanup();
}, 60_000);

describe('device identity: reports only their own device can write', { timeout: 240_000 }, () => {
  let first: string;

  it('enrolled devices sign every report; they verify, and the waves open on them', async () => {
    first = await f.push('first release, three devices enrolled');
    for (const d of DEVICES) f.start(d);
    for (const d of LATER)
      expect((await f.waitGateOpen(d, first)).reason).toBe('wave canary has 1 of 1 successes, baked 1s');
    for (const d of DEVICES) await f.waitApplied(d, first);
    // Each note entry ends with the device's signature line, and its rollout ref's name with its signature, by the
    // key `keystone identity` printed for it.
    for (const d of DEVICES) {
      const note = await f.reported(first, d, 'success');
      expect(note.signature?.keyId, `${d}'s note`).toBe(id[d]!.reportKeyId);
      expect((await f.waitRef(d, first, 'success')).ref.signature?.keyId, `${d}'s rollout ref`).toBe(
        id[d]!.reportKeyId,
      );
    }
    const view = await f.fleetStatus(first);
    for (const d of DEVICES) expect(deviceIn(view, d), d).toMatchObject({ state: 'success', report: 'verified' });
    expect(view.rollout).toMatchObject({
      requireEnrolled: true,
      waves: [
        { name: 'canary', success: 1 },
        { name: 'everyone', success: 2 },
      ],
    });
    expect(view.rollout?.notCounted).toBeUndefined();
  });

  let b: string;

  it("d3's credential forges the canary's success (rollout refs and notes): the later wave stays held, saying why; the fleet view shows it forged", async () => {
    await f.agent('c1').stop();
    f.fx.components = [{ ...sleeper('a'), version: '2.0.0' }];
    b = await f.push('2.0.0, while the canary is down');
    for (const d of LATER) await f.waitHeld(d, b, 'held: waiting for wave canary (0 of 1 successes)');

    // The attacker holds d3: its push token, and its key (read from its state directory).
    const d3Key = await signerOf(f.harness.get('d3')!.stateDir);
    const success = { wave: 'canary', device: 'c1', commit: b, state: 'success' } as const;
    const honestA = (await f.refOf('c1', first, 'success'))!.name;
    const forged = [
      rolloutRef(success), // (a) unsigned, as an earlier agent's
      rolloutRef(success, d3Key), // (b) signed by d3's own key
      honestA.replace(`/${first}-success.`, `/${b}-success.`), // c1's own signature of the first release, replayed
    ];
    expect(new Set(forged).size).toBe(3);
    await f.attackerPushRefs(b, forged);
    // (c) a note entry for c1, unsigned, on c1's own notes ref (Keystone's notes reporter, the devices' token).
    await f.writeNote('c1', b, 'success');
    const since = Date.now();

    for (const d of LATER) {
      // Every forged ref was read, and none counted: the gate says why it is not open.
      expect((await f.waitHeld(d, b, '; 3 reports not counted (forged: c1)')).msg).toBe(
        'held: waiting for wave canary (0 of 1 successes); 3 reports not counted (forged: c1)',
      );
      const hold = await f.staysHeld(d, b, since, BAKE_MS);
      expect(hold.reason, `${d}'s hold in GET /v1/revision`).toContain('not counted (forged: c1)');
      expect(f.applied(d)).toBe(first);
    }

    const view = await f.fleetStatus(b);
    expect(deviceIn(view, 'c1')).toMatchObject({
      state: 'forged',
      claimed: 'success',
      report: 'forged',
      reportReason: 'unsigned',
    });
    expect(notCountedOf(view)).toEqual(
      [
        `c1 canary success forged: signed by key ${d3Key.keyId}, not c1's enrolled key ${id.c1!.reportKeyId} (a forgery, or c1 was reinstalled and not enrolled again)`,
        `c1 canary success forged: the signature does not match what the report says (key ${id.c1!.reportKeyId} of devices/c1.cert)`,
        'c1 canary success forged: unsigned',
      ].sort(),
    );
    expect(view.rollout?.waves[0]).toMatchObject({ name: 'canary', success: 0 });
    expect(view.rollout?.halted).toBeUndefined();
    // The honest devices' own reports on the commit (held) verify.
    for (const d of LATER) expect(deviceIn(view, d)).toMatchObject({ state: 'pending', report: 'verified' });

    // The note again, signed with d3's key this time: forged still, and the view says whose key signed it.
    await f.writeNote('c1', b, 'success', { signer: d3Key });
    const again = await f.fleetStatus(b);
    expect(deviceIn(again, 'c1')).toMatchObject({
      state: 'forged',
      claimed: 'success',
      report: 'forged',
      reportReason: `signed by key ${d3Key.keyId}, not c1's enrolled key ${id.c1!.reportKeyId} (a forgery, or c1 was reinstalled and not enrolled again)`,
    });
    for (const d of LATER) expect(deviceIn(again, d).report).toBe('verified');
  });

  it('forged failures (of the canary, of an enrolled device of the later wave, of a device nobody enrolled) halt nothing', async () => {
    const d3Key = await signerOf(f.harness.get('d3')!.stateDir);
    // abort_failure_percent = 0: any one failure that counted would halt the commit.
    await f.attackerPushRefs(b, [
      rolloutRef({ wave: 'canary', device: 'c1', commit: b, state: 'failure' }, d3Key),
      rolloutRef({ wave: 'everyone', device: 'd2', commit: b, state: 'failure' }),
      rolloutRef({ wave: 'everyone', device: 'ghost', commit: b, state: 'failure' }, d3Key),
    ]);
    const since = Date.now();
    for (const d of LATER) {
      const held = await f.waitHeld(d, b, '6 reports not counted');
      expect(held.msg).toBe(
        'held: waiting for wave canary (0 of 1 successes); 6 reports not counted (forged: c1, d2; unverified: ghost)',
      );
      await f.staysHeld(d, b, since, BAKE_MS);
    }
    const view = await f.fleetStatus(b);
    expect(view.rollout?.halted).toBeUndefined();
    expect(notCountedOf(view)).toEqual(
      expect.arrayContaining([
        `c1 canary failure forged: signed by key ${d3Key.keyId}, not c1's enrolled key ${id.c1!.reportKeyId} (a forgery, or c1 was reinstalled and not enrolled again)`,
        'd2 everyone failure forged: unsigned',
        'ghost everyone failure unverified: ghost is not enrolled (no devices/ghost.cert)',
      ]),
    );
  });

  it("the canary's own success opens the gate, with the forgeries still on the server", async () => {
    f.start('c1');
    // Its own line replaces the forged one in its notes: the success signed by its key.
    const success = await f.reportedBy(b, 'c1', 'success', id.c1!.reportKeyId);
    for (const d of LATER) {
      const open = await f.waitGateOpen(d, b);
      expect(open.reason).toBe('wave canary has 1 of 1 successes, baked 1s');
      // Not on anything said before the canary's own success: a bake after it (the host's clock has whole seconds).
      expect(open.t).toBeGreaterThanOrEqual(Date.parse(success.time) + BAKE_MS - 1000);
    }
    // The forged failures of devices other than the canary were there all along: they halted nothing.
    const left = (await f.rolloutRefs())
      .filter((r) => r.ref.commit === b && r.ref.state === 'failure')
      .map((r) => r.ref.device);
    expect(left).toEqual(expect.arrayContaining(['d2', 'ghost']));
    for (const d of DEVICES) await f.waitApplied(d, b);
    for (const d of LATER) await f.reportedBy(b, d, 'success', id[d]!.reportKeyId);
    const view = await f.fleetStatus(b);
    for (const d of DEVICES) expect(deviceIn(view, d), d).toMatchObject({ state: 'success', report: 'verified' });
    expect(view.rollout?.halted).toBeUndefined();
    expect(view.rollout?.waves[0]).toMatchObject({ name: 'canary', success: 1 });
  });

  let reinstalled: DeviceIdentity;
  it('a reinstalled canary (new state directory, new key) is forged until enrolled again; then its reports verify', async () => {
    await f.agent('c1').stop();
    f.fx.components = [{ ...sleeper('a'), version: '3.0.0' }];
    const c = await f.push('3.0.0');
    reinstalled = await f.install('c1');
    expect(reinstalled.reportKeyId).not.toBe(id.c1!.reportKeyId);
    f.start('c1');
    await f.reportedBy(c, 'c1', 'success', reinstalled.reportKeyId);
    await f.waitRef('c1', c, 'success');
    const since = Date.now();
    const why = `signed by key ${reinstalled.reportKeyId}, not c1's enrolled key ${id.c1!.reportKeyId} (a forgery, or c1 was reinstalled and not enrolled again)`;
    for (const d of LATER) {
      await f.waitHeld(d, c, 'not counted (forged: c1)');
      await f.staysHeld(d, c, since, BAKE_MS);
    }
    const view = await f.fleetStatus(c);
    expect(deviceIn(view, 'c1')).toMatchObject({
      state: 'forged',
      claimed: 'success',
      report: 'forged',
      reportReason: why,
    });
    expect(notCountedOf(view)).toEqual([`c1 canary success forged: ${why}`]);

    // Enrolled again with its new identity: the next commit (the same plan, a new certificate) opens on its reports.
    await f.enrol('c1', { force: true });
    const d = await f.push('c1 enrolled again after its reinstall');
    await f.reportedBy(d, 'c1', 'success', reinstalled.reportKeyId);
    for (const x of LATER)
      expect((await f.waitGateOpen(x, d)).reason).toBe('wave canary has 1 of 1 successes, baked 1s');
    for (const x of DEVICES) await f.waitApplied(x, d);
    const after = await f.fleetStatus(d);
    expect(deviceIn(after, 'c1')).toMatchObject({ state: 'success', report: 'verified' });
    expect(after.rollout?.notCounted).toBeUndefined();
  });

  let e: string;
  it('revocation: once devices/revoked.toml (signed) names the canary, its honest, signed success no longer counts', async () => {
    f.fx.components = [{ ...sleeper('a'), version: '4.0.0' }];
    e = await f.push('4.0.0, and c1 revoked', (dir) =>
      writeFileSync(
        join(dir, 'devices', 'revoked.toml'),
        '[[revoked]]\ndevice = "c1"\nreason = "lost in transit 2026-12-04"\n',
      ),
    );
    expect(await gitIn(f.fx.dir, ['show', 'HEAD:SHA256SUMS'])).toContain('devices/revoked.toml');
    await f.reportedBy(e, 'c1', 'success', reinstalled.reportKeyId);
    await f.waitRef('c1', e, 'success');
    const since = Date.now();
    for (const d of LATER) {
      await f.waitHeld(d, e, 'not counted (revoked: c1)');
      const hold = await f.staysHeld(d, e, since, BAKE_MS);
      expect(hold.reason).toBe('held: waiting for wave canary (0 of 1 successes); 1 report not counted (revoked: c1)');
    }
    const view = await f.fleetStatus(e);
    expect(deviceIn(view, 'c1')).toMatchObject({ state: 'revoked', claimed: 'success', report: 'revoked' });
    expect(deviceIn(view, 'c1').reportReason).toContain('lost in transit 2026-12-04');
    expect(view.rollout?.notCounted?.map((n) => `${n.device} ${n.state} ${n.verdict}`)).toEqual(['c1 success revoked']);
    for (const d of LATER) expect(deviceIn(view, d).report).toBe('verified');
  });

  it("earlier agents' unsigned reports parse and show unverified; with require_enrolled = false and no devices/, they count as before", async () => {
    // An earlier agent's line on the shared notes ref, and its rollout ref, for a device never enrolled.
    const at = new Date().toISOString();
    await gitIn(f.fx.dir, [
      'notes',
      '--ref=refs/notes/keystone',
      'add',
      '-f',
      '-m',
      `keystone/old-gw success ${at} applied: 1 component running`,
      e,
    ]);
    await gitIn(f.fx.dir, ['push', '--quiet', f.reportsPushUrl, 'refs/notes/keystone:refs/notes/keystone'], {
      GIT_TERMINAL_PROMPT: '0',
    });
    await f.attackerPushRefs(e, [rolloutRef({ wave: 'everyone', device: 'old-gw', commit: e, state: 'success' })]);
    const view = await f.fleetStatus(e);
    expect(deviceIn(view, 'old-gw')).toMatchObject({
      state: 'unverified',
      claimed: 'success',
      report: 'unverified',
      reportReason: 'old-gw is not enrolled (no devices/old-gw.cert)',
    });
    expect(view.rollout?.notCounted).toContainEqual({
      device: 'old-gw',
      wave: 'everyone',
      state: 'success',
      verdict: 'unverified',
      reason: 'old-gw is not enrolled (no devices/old-gw.cert)',
    });

    // A fleet that does not require enrolment and has no devices/: the canary is down, and an earlier agent's
    // report of its success (unsigned note and rollout ref, in one push) opens the gate, as before issue 29.
    await f.agent('c1').stop();
    f.fleetToml = fleetToml('require_enrolled = false\n');
    f.fx.components = [{ ...sleeper('a'), version: '5.0.0' }];
    const g = await f.push('5.0.0, enrolment not required', (dir) => rmSync(join(dir, 'devices'), { recursive: true }));
    for (const d of LATER) await f.waitHeld(d, g, 'held: waiting for wave canary (0 of 1 successes)');
    const wrote = Date.now();
    await f.writeNote('c1', g, 'success', { rollout: true });
    const unsigned = await f.note(g, 'c1');
    expect(unsigned?.signature).toBeUndefined();
    const ref = (await f.rolloutRefs()).find((r) => r.ref.device === 'c1' && r.ref.commit === g);
    expect(ref?.ref.state).toBe('success');
    expect(ref?.name.endsWith(`${g}-success`), ref?.name).toBe(true);
    for (const d of LATER) {
      const open = await f.waitGateOpen(d, g);
      expect(open.reason).toBe('wave canary has 1 of 1 successes, baked 1s');
      expect(open.t, 'the gate opened on the unsigned report, not before it').toBeGreaterThanOrEqual(wrote);
    }
    for (const d of LATER) await f.reportedBy(g, d, 'success', id[d]!.reportKeyId);
    const open = await f.fleetStatus(g);
    expect(open.rollout).toMatchObject({
      requireEnrolled: false,
      waves: [
        { name: 'canary', success: 1 },
        { name: 'everyone', success: 2 },
      ],
    });
    expect(open.rollout?.notCounted).toBeUndefined();
    expect(deviceIn(open, 'c1')).toMatchObject({
      state: 'success',
      report: 'unverified',
      reportReason: 'c1 is not enrolled (no devices/c1.cert)',
    });
    expect(deviceIn(open, 'c1').claimed).toBeUndefined();
  });
});
