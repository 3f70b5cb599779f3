// Signed reports (SPEC §8, §15): a device's note entry and rollout ref carry its signature over what they say, and a
// reader's verdict follows from the device's certificate. Pure: keys are seeded, the certificate made in the test.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { reportKeyLine } from '../../src/identity/certificate.js';
import { signCertificate } from '../../src/identity/sign-certificate.js';
import {
  noteMessage,
  parseRefSignature,
  formatRefSignature,
  reportSigner,
  rolloutMessage,
} from '../../src/identity/report-signature.js';
import { CERT_CACHE_ENTRIES, counts, ReportVerifier } from '../../src/identity/report-verifier.js';
import { parseRevocations, revokedReason } from '../../src/identity/revocations.js';
import type { CommitStatus } from '../../src/report/commit-status.js';
import { formatStatusEntry, mergeStatusNote, parseStatusNote } from '../../src/report/status-note.js';
import { parseRolloutRef, rolloutRef } from '../../src/report/rollout-refs.js';
import { AGE, ENROLL, GW1, GW1_NEW, keyNamed, NOW, OTHER } from './identity-fixture.js';

const C = 'a'.repeat(40);
const status = (over: Partial<CommitStatus> = {}): CommitStatus => ({
  commit: C,
  state: 'failure',
  description: 'failed: api (exited 1)',
  context: 'keystone/gw-1',
  at: NOW + 60_000,
  fields: { target: 'edge', wave: 'canary' },
  details: {
    agent: '0.2.0',
    health: { uptimeS: 3600, load1: 0.12, memFreeBytes: 512e6, diskFreeBytes: 2.1e9, tempC: 48.5 },
    log: ['api: listening', 'api: \u001b[31mfatal\u001b[0m: bad config'],
  },
  ...over,
});

const certFor = (device: string, key = GW1, issuedAt = NOW) =>
  signCertificate({ device, reportKey: reportKeyLine(key), ageRecipient: AGE, labels: {}, issuedAt }, ENROLL);

function verifier(certs: Record<string, string>, o: { keys?: (typeof ENROLL)[]; revoked?: string } = {}) {
  const revocations = o.revoked === undefined ? undefined : parseRevocations(o.revoked, 'devices/revoked.toml');
  return new ReportVerifier({
    enrollmentKeys: o.keys ?? [ENROLL],
    now: () => NOW + 3_600_000,
    ...(revocations && { revoked: (c) => revokedReason(revocations, c) }),
    certificateOf: async (d) => (certs[d] === undefined ? undefined : { text: certs[d]!, file: `devices/${d}.cert` }),
  });
}

const entryOf = (note: string) => parseStatusNote(note)[0]!;
const checkEntry = (v: ReportVerifier, note: string) => {
  const e = entryOf(note);
  return v.check(e.context.slice('keystone/'.length), noteMessage(C, e.signed), e.signature, Date.parse(e.time));
};

describe('a signed note entry', () => {
  it('carries the details as fields, the log as indented lines without control characters, the signature last', () => {
    const lines = formatStatusEntry(status(), reportSigner(GW1));
    expect(lines[0]).toBe(
      `keystone/gw-1 failure ${new Date(NOW + 60_000).toISOString()} target=edge wave=canary agent=0.2.0 uptime=3600 load=0.12 mem=512000000 disk=2100000000 temp=48.5 failed: api (exited 1)`,
    );
    expect(lines.slice(1, 3)).toEqual(['  | api: listening', '  | api:  [31mfatal [0m: bad config']);
    expect(lines[3]).toMatch(/^ {2}~ [0-9a-f]{16} [A-Za-z0-9_-]{86}$/);
    const e = entryOf(lines.join('\n'));
    expect(e.fields).toMatchObject({ target: 'edge', wave: 'canary', agent: '0.2.0', temp: '48.5' });
    expect(e.log).toHaveLength(2);
    expect(e.description).toBe('failed: api (exited 1)');
  });

  it('bounds the log: 20 lines, 2 KB, the newest kept', () => {
    const log = Array.from({ length: 40 }, (_, i) => `api: line ${i} ${'x'.repeat(150)}`);
    const e = entryOf(formatStatusEntry(status({ details: { log } })).join('\n'));
    expect(e.log.length).toBeLessThanOrEqual(20);
    expect(Buffer.byteLength(e.log.join('\n'))).toBeLessThanOrEqual(2048);
    expect(e.log.at(-1)).toContain('line 39');
  });

  it('verifies for its device, and any change to what it says is forged', async () => {
    const note = mergeStatusNote(undefined, status(), reportSigner(GW1));
    const v = verifier({ 'gw-1': certFor('gw-1') });
    expect(await checkEntry(v, note)).toMatchObject({ verdict: 'verified', enrolled: true });
    for (const [from, to] of [
      ['failure', 'success'],
      ['wave=canary', 'wave=late'],
      ['temp=48.5', 'temp=20.0'],
      ['  | api: listening', '  | api: all good'],
    ])
      expect((await checkEntry(verifier({ 'gw-1': certFor('gw-1') }), note.replace(from!, to!))).verdict).toBe(
        'forged',
      );
    // Moved to another commit: the message names the commit.
    const e = entryOf(note);
    expect((await v.check('gw-1', noteMessage('b'.repeat(40), e.signed), e.signature)).verdict).toBe('forged');
  });

  it("another device's key, or no signature, is forged once the device is enrolled; unverified before its certificate", async () => {
    const v = verifier({ 'gw-1': certFor('gw-1') });
    const byOther = mergeStatusNote(undefined, status({ state: 'success' }), reportSigner(keyNamed('gw-2 report key')));
    expect(await checkEntry(v, byOther)).toMatchObject({
      verdict: 'forged',
      reason: expect.stringContaining('reinstalled'),
    });
    const unsigned = mergeStatusNote(undefined, status({ state: 'success' }));
    expect(await checkEntry(v, unsigned)).toMatchObject({
      verdict: 'forged',
      reason: expect.stringMatching(/^unsigned/),
    });
    const before = mergeStatusNote(undefined, status({ state: 'success', at: NOW - 86_400_000 }));
    const verdict = await checkEntry(v, before);
    expect(verdict).toMatchObject({ verdict: 'unverified', enrolled: true });
    expect(counts(verdict, false)).toBe(false);
  });

  it('a reinstalled device verifies once enrolled again with its new key', async () => {
    const note = mergeStatusNote(undefined, status(), reportSigner(GW1_NEW));
    expect((await checkEntry(verifier({ 'gw-1': certFor('gw-1') }), note)).verdict).toBe('forged');
    expect((await checkEntry(verifier({ 'gw-1': certFor('gw-1', GW1_NEW) }), note)).verdict).toBe('verified');
  });

  it('not enrolled, no enrolment key, a certificate by an unknown key: unverified (counted only where enrolment is not required)', async () => {
    const note = mergeStatusNote(undefined, status(), reportSigner(GW1));
    for (const v of [
      verifier({}),
      verifier({ 'gw-1': certFor('gw-1') }, { keys: [] }),
      verifier({ 'gw-1': certFor('gw-1') }, { keys: [OTHER] }),
    ]) {
      const r = await checkEntry(v, note);
      expect(r).toMatchObject({ verdict: 'unverified', enrolled: false });
      expect(counts(r, false)).toBe(true);
      expect(counts(r, true)).toBe(false);
    }
    // A certificate for another name under gw-1's file does not enrol gw-1.
    expect((await checkEntry(verifier({ 'gw-1': certFor('gw-2') }), note)).verdict).toBe('unverified');
  });

  it('revoked: named in devices/revoked.toml, by device or by key', async () => {
    const note = mergeStatusNote(undefined, status(), reportSigner(GW1));
    const certs = { 'gw-1': certFor('gw-1') };
    expect(
      (await checkEntry(verifier(certs, { revoked: '[[revoked]]\ndevice = "gw-1"\nreason = "stolen"\n' }), note))
        .verdict,
    ).toBe('revoked');
    expect(
      (
        await checkEntry(
          verifier(certs, {
            revoked: `[[revoked]]\ndevice = "gw-1"\nreport_key = "${reportKeyLine(GW1)}"\nreason = "stolen"\n`,
          }),
          note,
        )
      ).verdict,
    ).toBe('revoked');
    expect(
      (
        await checkEntry(
          verifier(certs, {
            revoked: `[[revoked]]\ndevice = "gw-1"\nreport_key = "${reportKeyLine(GW1_NEW)}"\nreason = "old key"\n`,
          }),
          note,
        )
      ).verdict,
    ).toBe('verified');
  });

  it("merging replaces the device's entry with its indented lines, and keeps every other line", () => {
    const first = mergeStatusNote(
      'keystone/gw-2 success 2026-12-01T00:00:00.000Z applied\nhuman-note here\n',
      status(),
      reportSigner(GW1),
    );
    const second = mergeStatusNote(
      first,
      status({ state: 'success', details: {}, description: 'applied: 1 component running' }),
      reportSigner(GW1),
    );
    expect(second.split('\n').filter((l) => l.startsWith('  |'))).toEqual([]);
    expect(second.split('\n').filter((l) => l.startsWith('  ~'))).toHaveLength(1);
    expect(parseStatusNote(second).map((e) => [e.context, e.state])).toEqual([
      ['keystone/gw-2', 'success'],
      ['keystone/gw-1', 'success'],
    ]);
    expect(second).toContain('human-note here');
  });

  it("an earlier agent's line (no fields, no indented lines) parses as before, unsigned", () => {
    const [e] = parseStatusNote('keystone/gw-1 success 2026-12-01T00:00:00.000Z applied: 1 component running\n');
    expect(e).toMatchObject({
      state: 'success',
      description: 'applied: 1 component running',
      log: [],
      signed: ['keystone/gw-1 success 2026-12-01T00:00:00.000Z applied: 1 component running'],
    });
    expect(e!.signature).toBeUndefined();
  });
});

describe('a signed rollout ref', () => {
  const r = { wave: 'canary', device: 'gw-1', commit: C, state: 'success' as const };

  it('names its signature after the state, and parses back', () => {
    for (const state of ['success', 'failure'] as const) {
      const ref = rolloutRef({ ...r, state }, reportSigner(GW1));
      expect(ref).toMatch(new RegExp(`-${state}\\.[0-9a-f]{16}[A-Za-z0-9_-]{86}$`));
      const parsed = parseRolloutRef(ref)!;
      expect(parsed).toMatchObject({ ...r, state });
      expect(parsed.signature?.keyId).toBe(reportSigner(GW1).keyId);
    }
    // Deterministic: the same report is the same name (a retry rewrites nothing).
    expect(rolloutRef(r, reportSigner(GW1))).toBe(rolloutRef(r, reportSigner(GW1)));
  });

  it('verifies; the same signature on another state, wave or device does not', async () => {
    const v = verifier({ 'gw-1': certFor('gw-1'), 'gw-2': certFor('gw-2', keyNamed('gw-2 report key')) });
    const sig = parseRolloutRef(rolloutRef(r, reportSigner(GW1)))!.signature!;
    expect((await v.check('gw-1', rolloutMessage(r), sig)).verdict).toBe('verified');
    expect((await v.check('gw-1', rolloutMessage({ ...r, state: 'failure' }), sig)).verdict).toBe('forged');
    expect((await v.check('gw-1', rolloutMessage({ ...r, wave: 'late' }), sig)).verdict).toBe('forged');
    expect((await v.check('gw-2', rolloutMessage({ ...r, device: 'gw-2' }), sig)).verdict).toBe('forged');
  });

  it('an unsigned ref of an earlier agent still parses; a malformed signature does not', () => {
    expect(parseRolloutRef(rolloutRef(r))).toMatchObject(r);
    expect(parseRolloutRef(rolloutRef(r))!.signature).toBeUndefined();
    const signed = rolloutRef(r, reportSigner(GW1));
    expect(parseRolloutRef(signed.slice(0, -1) + '!')).toBeUndefined();
  });

  it('one spelling per signature (property): a name whose signature part is changed is another report or none', () => {
    const sig = parseRefSignature(
      formatRefSignature({ keyId: '0123456789abcdef', signature: new Uint8Array(64).fill(7) }),
    )!;
    expect(sig.keyId).toBe('0123456789abcdef');
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 64, maxLength: 64 }), (bytes) => {
        const text = formatRefSignature({ keyId: 'ffffffffffffffff', signature: bytes });
        expect(Buffer.from(parseRefSignature(text)!.signature)).toEqual(Buffer.from(bytes));
      }),
    );
  });
});

describe('the verifier keeps a bounded number of certificates', () => {
  it('looks up again the least recently used one once more than CERT_CACHE_ENTRIES devices were met', async () => {
    const looked: string[] = [];
    const v = new ReportVerifier({
      enrollmentKeys: [ENROLL],
      now: () => NOW,
      certificateOf: async (d) => (looked.push(d), undefined),
    });
    const msg = new Uint8Array(1);
    await v.check('d-0', msg, undefined);
    for (let i = 1; i <= CERT_CACHE_ENTRIES; i++) await v.check(`d-${i}`, msg, undefined);
    expect(looked).toHaveLength(CERT_CACHE_ENTRIES + 1);
    await v.check(`d-${CERT_CACHE_ENTRIES}`, msg, undefined); // still kept
    expect(looked).toHaveLength(CERT_CACHE_ENTRIES + 1);
    await v.check('d-0', msg, undefined); // the oldest went
    expect(looked).toHaveLength(CERT_CACHE_ENTRIES + 2);
  });
});
