// A signature dated in the future (SPEC §6): refused beyond the allowed clock skew, so that one wrong clock cannot
// raise the replay floor above every honest signature to come. Real keystonectl and minisign signatures.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { buildKeyring } from '../../src/trust/keyring.js';
import { TrustError } from '../../src/trust/trust-error.js';
import { verifyRevision } from '../../src/trust/verify-revision.js';
import { runCtl } from '../support/cli-run.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';

/** 2100-01-01T00:00:00Z */
const YEAR_2100 = 4_102_444_800;
/** The device's clock in these tests: 2026-12-01T00:00:00Z. */
const NOW = 1_796_083_200;
const PLAN = 'plans/edge.toml';
/** The real minisign CLI signs with trusted comments that keystonectl would not write. */
const minisign = needs('minisign');

let repo: ExampleRepo;
beforeEach(async () => {
  repo = await exampleRepo();
});
afterEach(() => repo.cleanup());

const keyPath = (name: string, ext: 'key' | 'pub') => join(repo.keyDir, `${name}.${ext}`);
const keyring = (...names: string[]) =>
  buildKeyring(names.map((k) => ({ source: `${k}.pub`, text: readFileSync(keyPath(k, 'pub'), 'utf8') })));

async function signAt(name: string, seconds: number, ...args: string[]): Promise<void> {
  const r = await runCtl(['sign', '--key', keyPath(name, 'key'), '--repo', repo.dir, ...args], '/', {
    now: () => seconds * 1000,
  });
  expect(r.code, r.stderr).toBe(0);
}

async function verifyAt(now: number, more: { maxClockSkewSeconds?: number; names?: string[] } = {}) {
  return verifyRevision(new DirectoryReader(repo.dir), {
    keyring: keyring(...(more.names ?? ['test'])),
    now,
    ...(more.maxClockSkewSeconds !== undefined && { maxClockSkewSeconds: more.maxClockSkewSeconds }),
  }).catch((e: unknown) => e);
}

describe('a signature from the future', () => {
  it('keystonectl-signed at 2100: apply-dry refuses it with KS_SIGNATURE_FROM_FUTURE, naming both clocks and the fix', async () => {
    await signAt('test', YEAR_2100);
    const r = await runCtl(['apply-dry', PLAN, '--json', '--repo', repo.dir, ...repo.trust], '/', {
      now: () => NOW * 1000,
    });
    expect(r.code, r.stderr).toBe(2);
    const { error } = JSON.parse(r.stdout) as { error: { code: string; message: string; file: string } };
    expect(error.code).toBe('KS_SIGNATURE_FROM_FUTURE');
    expect(error.file).toBe('SHA256SUMS.minisig');
    expect(error.message).toContain('2100-01-01T00:00:00.000Z');
    expect(error.message).toContain('2026-12-01T00:00:00.000Z');
    expect(error.message).toMatch(/check the device's clock, or re-sign/);
    expect(r.stderr).toMatch(/refused: .*\[KS_SIGNATURE_FROM_FUTURE\]/);
  });

  it.skipIf(minisign.skip)(
    minisign.title('minisign-signed with a trusted comment dated 2100: refused by verifyRevision'),
    async () => {
      const pk = join(repo.keyDir, 'm.pub');
      const sk = join(repo.keyDir, 'm.key');
      execFileSync('minisign', ['-G', '-W', '-p', pk, '-s', sk], { stdio: 'pipe' });
      execFileSync(
        'minisign',
        ['-S', '-s', sk, '-m', 'SHA256SUMS', '-t', `timestamp:${YEAR_2100}\tfile:SHA256SUMS\thashed`],
        { cwd: repo.dir, stdio: 'pipe' },
      );
      const err = await verifyAt(NOW, { names: ['m'] });
      expect(err).toBeInstanceOf(TrustError);
      expect((err as TrustError).code).toBe('KS_SIGNATURE_FROM_FUTURE');
    },
  );

  it('within the allowed skew (default 5 minutes) it is accepted; beyond it, or with --max-clock-skew 0, refused', async () => {
    await signAt('test', NOW + 240);
    expect(await verifyAt(NOW)).toMatchObject({ signedAt: NOW + 240 });
    expect(((await verifyAt(NOW, { maxClockSkewSeconds: 0 })) as TrustError).code).toBe('KS_SIGNATURE_FROM_FUTURE');
    await signAt('test', NOW + 301);
    expect(((await verifyAt(NOW)) as TrustError).code).toBe('KS_SIGNATURE_FROM_FUTURE');
    // The flag, through keystonectl verify: an hour of skew allowed accepts it; a malformed value is a usage error.
    const at = (args: string[]) =>
      runCtl(['verify', '--repo', repo.dir, ...repo.trust, ...args], '/', { now: () => NOW * 1000 });
    expect((await at([])).code).toBe(2);
    const ok = await at(['--max-clock-skew', '1h']);
    expect(ok.code, ok.stderr).toBe(0);
    const bad = await at(['--max-clock-skew', 'soon']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--max-clock-skew must be a duration/);
  });

  it('a device whose clock was never set (1970) refuses an honest signature, and says that its clock looks unset', async () => {
    await signAt('test', NOW);
    const err = (await verifyAt(120)) as TrustError;
    expect(err.code).toBe('KS_SIGNATURE_FROM_FUTURE');
    expect(err.message).toContain('1970-01-01T00:02:00.000Z');
    expect(err.message).toMatch(/clock looks unset.*set \(NTP, or date -s\)/);
  });

  it('one trusted key that signs from the future does not count, and cannot raise the floor: the honest signature decides', async () => {
    const r = await runCtl(['keygen', '--out', keyPath('second', 'key').slice(0, -4), '--no-password'], '/');
    expect(r.code, r.stderr).toBe(0);
    await signAt('test', NOW - 60);
    await signAt('second', YEAR_2100, '--append');
    const ok = await verifyAt(NOW, { names: ['test', 'second'] });
    expect(ok).toMatchObject({ signedAt: NOW - 60 });
    expect((ok as { signers: string[] }).signers).toHaveLength(1);
  });

  it.skipIf(minisign.skip)(
    minisign.title('a timestamp past what a Date can hold is refused with the code, not a crash'),
    async () => {
      await signAt('test', NOW);
      const sig = join(repo.dir, 'SHA256SUMS.minisig');
      const pk = join(repo.keyDir, 'm.pub');
      const sk = join(repo.keyDir, 'm.key');
      execFileSync('minisign', ['-G', '-W', '-p', pk, '-s', sk], { stdio: 'pipe' });
      execFileSync(
        'minisign',
        ['-S', '-s', sk, '-x', sig, '-m', 'SHA256SUMS', '-t', 'timestamp:999999999999999\tfile:SHA256SUMS\thashed'],
        { cwd: repo.dir, stdio: 'pipe' },
      );
      const err = (await verifyAt(NOW, { names: ['m'] })) as TrustError;
      expect(err.code).toBe('KS_SIGNATURE_FROM_FUTURE');
      expect(err.message).toContain('999999999999999 s after 1970');
    },
  );
});
