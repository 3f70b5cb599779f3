// The `identity` and `enrollment` checks of `keystone doctor` on real files: the device's keys as the agent's start
// judges them (none yet, safe, unsafe, malformed, gone), and its certificate, given with --certificate or found in
// devices/ of the directory the agent follows, verified against the enrolment key and compared with the keys the device
// holds. Nothing in the state directory is written.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkEnrollment } from '../../src/doctor/enrollment-check.js';
import { checkIdentity } from '../../src/doctor/identity-check.js';
import type { AppliedState } from '../../src/doctor/applied-state.js';
import { signCertificate } from '../../src/identity/sign-certificate.js';
import { ensureDeviceKeys, identityPaths, type DeviceKeys } from '../../src/identity/device-keys.js';
import { formatPublicKey, generateKey, type SecretKey } from '../../src/trust/minisign.js';
import { scratch, snapshot, type Scratch } from './doctor-fixtures.js';

const NOW = Date.parse('2030-01-02T03:04:05Z');
const DAY = 86_400_000;
let seed = 1;
const randomBytes = (n: number) => Uint8Array.from({ length: n }, () => seed++ & 0xff);
const NOTHING_APPLIED: AppliedState = { kind: 'none', file: '/nonexistent/state.db' };

let s: Scratch;
let enrolKey: SecretKey;
let enrolPub: string;
beforeEach(() => {
  s = scratch();
  mkdirSync(s.stateDir, { mode: 0o711 });
  enrolKey = generateKey(randomBytes);
  enrolPub = join(s.dir, 'enroll.pub');
  writeFileSync(enrolPub, formatPublicKey(enrolKey));
});
afterEach(() => s.cleanup());

const makeKeys = async () => (await ensureDeviceKeys(s.stateDir, { now: () => NOW, randomBytes, create: true })).keys;
const certFor = (
  device: string,
  keys: Pick<DeviceKeys, 'reportPublic' | 'ageRecipient'>,
  o: { key?: SecretKey; expiresAt?: number } = {},
) =>
  signCertificate(
    {
      device,
      reportKey: keys.reportPublic,
      ageRecipient: keys.ageRecipient,
      labels: { site: 'berlin' },
      issuedAt: NOW - DAY,
      ...(o.expiresAt !== undefined && { expiresAt: o.expiresAt }),
    },
    o.key ?? enrolKey,
  );

describe('the identity check', () => {
  it('no keys yet: skipped, saying the first start (or keystone identity) makes them; nothing written', async () => {
    const before = snapshot(s.stateDir);
    const r = await checkIdentity(s.stateDir);
    expect(r).toMatchObject({ check: 'identity', status: 'skip' });
    expect(r.detail).toContain('the agent makes them at its first start');
    expect(snapshot(s.stateDir)).toEqual(before);
  });

  it('passes keys as the agent makes them, naming their public halves', async () => {
    const keys = await makeKeys();
    const before = snapshot(s.stateDir);
    const r = await checkIdentity(s.stateDir);
    expect(r.status).toBe('pass');
    expect(r.detail).toContain(
      `report key ${keys.reportPublic} (id ${keys.reportKeyId}), age recipient ${keys.ageRecipient}`,
    );
    expect(r.detail).not.toContain('AGE-SECRET-KEY');
    expect(snapshot(s.stateDir)).toEqual(before);
  });

  it('fails a key file others can read, with the chmod as the fix and the code', async () => {
    await makeKeys();
    const key = identityPaths(s.stateDir).ageKey;
    chmodSync(key, 0o644);
    const r = await checkIdentity(s.stateDir);
    expect(r).toMatchObject({ status: 'fail', code: 'KS_IDENTITY_UNSAFE' });
    expect(r.detail).toContain(`${key} can be read or written by other users (mode 0644)`);
    expect(r.fix).toMatch(new RegExp(`^chmod 600 ${key}`));
  });

  it('fails a directory others can enter, a key that does not parse, and keys that are gone', async () => {
    await makeKeys();
    const paths = identityPaths(s.stateDir);
    chmodSync(paths.dir, 0o755);
    expect(await checkIdentity(s.stateDir)).toMatchObject({
      status: 'fail',
      code: 'KS_IDENTITY_UNSAFE',
      fix: `chmod 700 ${paths.dir}`,
    });
    chmodSync(paths.dir, 0o700);

    writeFileSync(paths.reportKey, 'not a key\n');
    const malformed = await checkIdentity(s.stateDir);
    expect(malformed).toMatchObject({ status: 'fail', code: 'KS_IDENTITY_MALFORMED' });
    expect(malformed.fix).toMatch(/^move /);

    rmSync(paths.dir, { recursive: true });
    const gone = await checkIdentity(s.stateDir);
    expect(gone).toMatchObject({ status: 'fail', code: 'KS_IDENTITY_MISSING' });
    expect(gone.fix).toContain(`move ${paths.marker} aside`);
  });
});

describe('the enrollment check', () => {
  const setupWith = (
    over: {
      certificateFile?: string;
      keyFiles?: string[];
      root?: string;
      device?: string;
      labels?: Record<string, string>;
    } = {},
  ) => ({
    stateDir: s.stateDir,
    device: over.device ?? 'gw-1',
    labels: over.labels ?? { site: 'berlin' },
    source:
      over.root !== undefined
        ? { kind: 'dir' as const, root: over.root }
        : { kind: 'none' as const, problem: 'no source' },
    enrollment: {
      keyFiles: over.keyFiles ?? [enrolPub],
      ...(over.certificateFile !== undefined && { certificateFile: over.certificateFile }),
    },
  });

  it('skipped without --enrollment-key', async () => {
    const r = await checkEnrollment({ ...setupWith(), enrollment: { keyFiles: [] } }, NOTHING_APPLIED, NOW);
    expect(r).toMatchObject({ check: 'enrollment', status: 'skip' });
  });

  it('passes the --certificate file that names the device and its own keys', async () => {
    const keys = await makeKeys();
    const file = join(s.dir, 'gw-1.cert');
    writeFileSync(file, certFor('gw-1', keys));
    const r = await checkEnrollment(setupWith({ certificateFile: file }), NOTHING_APPLIED, NOW);
    expect(r.status, r.detail).toBe('pass');
    expect(r.detail).toContain(`${file}: device gw-1, signed by enrolment key`);
    expect(r.detail).toContain("it names this device's own keys");
    // Labels the agent states that the certificate does not vouch for: a selector wave would not count the device.
    const unvouched = await checkEnrollment(
      setupWith({ certificateFile: file, labels: { site: 'berlin', ring: 'canary' } }),
      NOTHING_APPLIED,
      NOW,
    );
    expect(unvouched).toMatchObject({
      status: 'warn',
      detail: expect.stringContaining('does not vouch for its labels ring=canary'),
      fix: expect.stringContaining('--label ring=canary'),
    });
  });

  it('finds devices/<device>.cert in the directory followed, and honours devices/revoked.toml there', async () => {
    const keys = await makeKeys();
    const repo = join(s.dir, 'repo');
    mkdirSync(join(repo, 'devices'), { recursive: true });
    writeFileSync(join(repo, 'devices', 'gw-1.cert'), certFor('gw-1', keys));
    const found = await checkEnrollment(setupWith({ root: repo }), NOTHING_APPLIED, NOW);
    expect(found.status, found.detail).toBe('pass');
    expect(found.detail).toContain(`devices/gw-1.cert (directory ${repo})`);

    writeFileSync(
      join(repo, 'devices', 'revoked.toml'),
      '[[revoked]]\ndevice = "gw-1"\nreason = "stolen 2029-12-31"\n',
    );
    const revoked = await checkEnrollment(setupWith({ root: repo }), NOTHING_APPLIED, NOW);
    expect(revoked).toMatchObject({ status: 'fail', code: 'KS_CERT_REVOKED' });
    expect(revoked.detail).toContain('stolen 2029-12-31');
  });

  it('warns when there is no certificate to find, saying how to enrol', async () => {
    await makeKeys();
    const repo = join(s.dir, 'empty-repo');
    mkdirSync(repo);
    const r = await checkEnrollment(setupWith({ root: repo }), NOTHING_APPLIED, NOW);
    expect(r.status).toBe('warn');
    expect(r.detail).toContain('no certificate for gw-1: devices/gw-1.cert is not in');
    expect(r.fix).toContain(
      'keystonectl enroll --key ENROLL.key --identity gw-1.identity.json --out devices/gw-1.cert',
    );
  });

  it('warns KS_CERT_OTHER_KEY for a certificate of other keys (a reinstalled device not enrolled again)', async () => {
    const old = await makeKeys();
    const file = join(s.dir, 'gw-1.cert');
    writeFileSync(file, certFor('gw-1', old));
    // Reinstalled: the state directory's identity made again.
    rmSync(identityPaths(s.stateDir).dir, { recursive: true });
    rmSync(identityPaths(s.stateDir).marker);
    const now = await makeKeys();
    const r = await checkEnrollment(setupWith({ certificateFile: file }), NOTHING_APPLIED, NOW);
    expect(r).toMatchObject({ status: 'warn', code: 'KS_CERT_OTHER_KEY' });
    expect(r.detail).toContain(
      `it names report key ${old.reportPublic} and age recipient ${old.ageRecipient}, not this device's own`,
    );
    expect(r.detail).toContain(`the device holds report key ${now.reportPublic}`);
    expect(r.fix).toMatch(/^re-enrol with keystonectl enroll --identity …/);
  });

  it('fails a certificate signed by another key, of another device, or expired, with the codes of verifyCertificate', async () => {
    const keys = await makeKeys();
    const file = join(s.dir, 'gw-1.cert');
    writeFileSync(file, certFor('gw-1', keys, { key: generateKey(randomBytes) }));
    expect(await checkEnrollment(setupWith({ certificateFile: file }), NOTHING_APPLIED, NOW)).toMatchObject({
      status: 'fail',
      code: 'KS_CERT_UNKNOWN_KEY',
    });
    writeFileSync(file, certFor('gw-2', keys));
    expect(await checkEnrollment(setupWith({ certificateFile: file }), NOTHING_APPLIED, NOW)).toMatchObject({
      status: 'fail',
      code: 'KS_CERT_WRONG_DEVICE',
    });
    writeFileSync(file, certFor('gw-1', keys, { expiresAt: NOW - 1000 }));
    expect(await checkEnrollment(setupWith({ certificateFile: file }), NOTHING_APPLIED, NOW)).toMatchObject({
      status: 'fail',
      code: 'KS_CERT_EXPIRED',
    });
  });
});
