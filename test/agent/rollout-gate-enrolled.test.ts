// The gate with enrolled devices (SPEC §15): it counts a rollout ref only when the ref's signature verifies against
// its device's certificate in the held commit's devices/, minus devices/revoked.toml; a forged success opens nothing,
// a forged failure halts nothing. The ref source and the commit's files are in memory here (the real ones: the e2e
// suite test/e2e/device-identity.e2e.test.ts).
import { describe, expect, it } from 'vitest';
import { reportAdmission } from '../../src/agent/report-admission.js';
import { RolloutGate, type RolloutRecall } from '../../src/agent/rollout-gate.js';
import type { DesiredState } from '../../src/core/desired-state.js';
import { rolloutOf } from '../../src/core/rollout.js';
import type { RolloutState } from '../../src/core/rollout-gate.js';
import { reportKeyLine } from '../../src/identity/certificate.js';
import { signCertificate } from '../../src/identity/sign-certificate.js';
import { reportSigner } from '../../src/identity/report-signature.js';
import type { ReadResult, RepoReader } from '../../src/source/repo-reader.js';
import { rolloutRef } from '../../src/report/rollout-refs.js';
import type { SecretKey } from '../../src/trust/minisign.js';
import { AGE, ENROLL, keyNamed, NOW } from '../identity/identity-fixture.js';

const C = 'c'.repeat(40);
const rollout = (extra: Record<string, unknown> = {}) =>
  rolloutOf({
    waves: [
      { name: 'canary', devices: ['c-1', 'c-2'] },
      { name: 'rest', percent: 100 },
    ],
    bake: '0s',
    min_success: 1,
    abort_failure_percent: 0,
    ...extra,
  });
const state: DesiredState = {
  planFile: 'plans/a.toml',
  components: [{ name: 'web', hash: 'h' } as never],
  layers: [['web']],
  startOrder: ['web'],
};
const KEYS: Record<string, SecretKey> = { 'c-1': keyNamed('c-1'), 'c-2': keyNamed('c-2'), 'r-1': keyNamed('r-1') };

/** A commit's files in memory; a path ending in `/` makes its directory exist. */
function files(map: Record<string, string>): RepoReader {
  return {
    label: 'memory',
    async readFile(path: string, maxBytes: number): Promise<ReadResult> {
      if (Object.keys(map).some((p) => p.startsWith(`${path}/`)))
        return { ok: false, code: 'KS_NOT_A_FILE', message: `${path} is a directory` };
      const text = map[path];
      if (text === undefined) return { ok: false, code: 'KS_FILE_NOT_FOUND', message: `${path} not found` };
      if (text.length > maxBytes) return { ok: false, code: 'KS_FILE_TOO_LARGE', message: 'too large' };
      return { ok: true, bytes: new TextEncoder().encode(text) };
    },
  };
}

const cert = (device: string) =>
  signCertificate(
    { device, reportKey: reportKeyLine(KEYS[device]!), ageRecipient: AGE, labels: {}, issuedAt: NOW },
    ENROLL,
  );
const enrolled = { 'devices/c-1.cert': cert('c-1'), 'devices/c-2.cert': cert('c-2'), 'devices/r-1.cert': cert('r-1') };

const recall = (): RolloutRecall => ({
  firstSuccessSeen: () => undefined,
  recordFirstSuccess: () => undefined,
  goodState: () => undefined,
});

/** Refs as [device, state, signed by (a device's key, or none)]. */
const refs = (list: Array<[string, RolloutState, SecretKey | undefined]>) =>
  list.map(([device, st, key]) => ({
    ref: rolloutRef({ wave: 'canary', device, commit: C, state: st }, key && reportSigner(key)),
    oid: 'f'.repeat(40),
  }));

async function decide(
  listed: ReturnType<typeof refs>,
  o: { files?: Record<string, string>; keys?: SecretKey[]; rollout?: ReturnType<typeof rollout> } = {},
) {
  const r = o.rollout ?? rollout();
  const reader = files(o.files ?? enrolled);
  const admission = await reportAdmission({
    raw: reader,
    signed: reader,
    rollout: r,
    enrollmentKeys: o.keys ?? [ENROLL],
    now: () => NOW + 1000,
  });
  const gate = new RolloutGate({
    refs: { list: async () => ({ refs: listed, serverTime: NOW }) },
    store: recall(),
    now: () => NOW,
    random: () => 0,
  });
  // A wave is read whole only after samples have shown it small (rollout-gate.ts): read until the read is whole.
  let out = await gate.decide([{ commit: C, rollout: r, wave: 1, state, admission }]);
  for (let i = 0; i < 4 && !('error' in out) && !out.complete; i++)
    out = await gate.decide([{ commit: C, rollout: r, wave: 1, state, admission }]);
  if ('error' in out) throw out.error;
  expect(out.complete).toBe(true);
  return out.decisions.get(C)!;
}

describe('the rollout gate with enrolled devices', () => {
  it("the canary's own signed success opens it", async () => {
    expect((await decide(refs([['c-1', 'success', KEYS['c-1']]]))).kind).toBe('open');
  });

  it('a success forged by another device (its own key, or none) opens nothing, and the reason says so', async () => {
    for (const key of [KEYS['r-1'], undefined]) {
      const d = await decide(refs([['c-1', 'success', key]]));
      expect(d.kind).toBe('held');
      expect(d.reason).toMatch(/1 report not counted \(forged: c-1\)/);
    }
  });

  it('a forged failure halts nothing; an honest one halts', async () => {
    expect(
      (
        await decide(
          refs([
            ['c-2', 'failure', KEYS['r-1']],
            ['c-1', 'success', KEYS['c-1']],
          ]),
        )
      ).kind,
    ).toBe('open');
    expect(
      (
        await decide(
          refs([
            ['c-2', 'failure', KEYS['c-2']],
            ['c-1', 'success', KEYS['c-1']],
          ]),
        )
      ).kind,
    ).toBe('halted');
  });

  it('a revoked device counts for nothing', async () => {
    const revoked = { ...enrolled, 'devices/revoked.toml': '[[revoked]]\ndevice = "c-1"\nreason = "stolen"\n' };
    const d = await decide(refs([['c-1', 'success', KEYS['c-1']]]), { files: revoked });
    expect(d).toMatchObject({ kind: 'held', reason: expect.stringContaining('revoked: c-1') });
  });

  it('a devices/ directory requires enrolment by default: a device without a certificate, or an agent without an enrolment key, counts nothing', async () => {
    const { 'devices/c-1.cert': _gone, ...others } = enrolled;
    expect((await decide(refs([['c-1', 'success', KEYS['c-1']]]), { files: others })).kind).toBe('held');
    expect((await decide(refs([['c-1', 'success', KEYS['c-1']]]), { keys: [] })).kind).toBe('held');
    // require_enrolled = false: an unenrolled device's report counts (an enrolled one's must still verify).
    const relaxed = rollout({ require_enrolled: false });
    expect((await decide(refs([['c-1', 'success', undefined]]), { files: others, rollout: relaxed })).kind).toBe(
      'open',
    );
    expect((await decide(refs([['c-1', 'success', KEYS['r-1']]]), { rollout: relaxed })).kind).toBe('held');
  });

  it('no devices/ and no require_enrolled: unsigned reports of earlier agents count as before', async () => {
    expect((await decide(refs([['c-1', 'success', undefined]]), { files: {}, keys: [] })).kind).toBe('open');
  });

  it('a device that trusts an enrolment key requires enrolment even where the commit has no devices/ (devices/ is not signed: a pushed commit without it turns no check off)', async () => {
    expect((await decide(refs([['c-1', 'success', undefined]]), { files: {} })).kind).toBe('held');
    expect((await decide(refs([['c-1', 'success', KEYS['c-1']]]), { files: {} })).kind).toBe('held');
    // Only the signed fleet.toml turns it off.
    expect(
      (
        await decide(refs([['c-1', 'success', undefined]]), {
          files: {},
          rollout: rollout({ require_enrolled: false }),
        })
      ).kind,
    ).toBe('open');
  });

  it("a selector wave counts an enrolled device's report only when its certificate vouches for the selected labels", async () => {
    const bySelector = rolloutOf({
      waves: [
        { name: 'canary', selector: { ring: 'canary' } },
        { name: 'rest', percent: 100 },
      ],
      bake: '1h',
      min_success: 1,
      abort_failure_percent: 0,
    });
    const vouched = signCertificate(
      {
        device: 'c-1',
        reportKey: reportKeyLine(KEYS['c-1']!),
        ageRecipient: AGE,
        labels: { ring: 'canary' },
        issuedAt: NOW,
      },
      ENROLL,
    );
    // r-1, enrolled without labels, signs a success under the canary's wave: its own, but not a canary's.
    const d = await decide(refs([['r-1', 'success', KEYS['r-1']]]), { rollout: bySelector });
    expect(d).toMatchObject({ kind: 'held', reason: expect.stringContaining('unverified: r-1') });
    // c-1, vouched for: counted (its bake of an hour then runs: held on the bake, no longer on the count).
    const ok = await decide(refs([['c-1', 'success', KEYS['c-1']]]), {
      rollout: bySelector,
      files: { ...enrolled, 'devices/c-1.cert': vouched },
    });
    expect(ok).toMatchObject({ kind: 'held', successes: 1 });
    expect(ok.reason).not.toContain('not counted');
  });

  it('a devices/revoked.toml that does not parse refuses the commit (nothing is counted on a guess)', async () => {
    const reader = files({ ...enrolled, 'devices/revoked.toml': '[[revoked]]\nname = 1\n' });
    await expect(
      reportAdmission({ raw: reader, signed: reader, rollout: rollout(), enrollmentKeys: [ENROLL], now: () => NOW }),
    ).rejects.toMatchObject({ code: 'KS_REVOCATIONS_INVALID' });
    // Nor one too large to read.
    const big = files({ ...enrolled, 'devices/revoked.toml': '#'.repeat(1024 * 1024 + 1) });
    await expect(
      reportAdmission({ raw: big, signed: big, rollout: rollout(), enrollmentKeys: [ENROLL], now: () => NOW }),
    ).rejects.toMatchObject({ code: 'KS_REVOCATIONS_INVALID' });
  });
});
