// Trusted keys read as the agent reads them: real keys from keystonectl keygen, and files that are not keys.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTrustedKeys } from '../../src/doctor/trusted-keys-check.js';
import { runCtl } from '../support/cli-run.js';
import { scratch, type Scratch } from './doctor-fixtures.js';

let s: Scratch;
let pub1: string;
let pub2: string;
beforeAll(async () => {
  s = scratch();
  for (const name of ['one', 'two']) {
    const r = await runCtl(['keygen', '--out', join(s.dir, name), '--no-password'], s.dir);
    expect(r.code, r.stderr).toBe(0);
  }
  pub1 = join(s.dir, 'one.pub');
  pub2 = join(s.dir, 'two.pub');
});
afterAll(() => s.cleanup());

describe('trusted-keys', () => {
  it('passes keys that parse, with their ids and the threshold', async () => {
    const r = await checkTrustedKeys({ unsigned: false, keyFiles: [pub1, pub2], threshold: '2' });
    expect(r).toMatchObject({ check: 'trusted-keys', status: 'pass' });
    // minisign prints a key id as a number (PRIX64): a leading zero is not printed, so an id may be shorter than 16.
    expect(r.detail).toMatch(/^2 trusted keys \([0-9A-F]{1,16}, [0-9A-F]{1,16}\), 2 signatures required$/);
  });

  it('fails a file that is no public key, naming it', async () => {
    const bad = join(s.dir, 'bad.pub');
    writeFileSync(bad, 'untrusted comment: not really\nthis is not a key\n');
    const r = await checkTrustedKeys({ unsigned: false, keyFiles: [pub1, bad] });
    expect(r).toMatchObject({ status: 'fail', code: 'KS_KEY_MALFORMED' });
    expect(r.detail.startsWith(`${bad}: `)).toBe(true);
    expect(r.fix).toContain('public key');
  });

  it('fails a secret key given as a trusted key', async () => {
    const r = await checkTrustedKeys({ unsigned: false, keyFiles: [join(s.dir, 'one.key')] });
    expect(r).toMatchObject({ status: 'fail' });
    expect(r.detail).toContain(join(s.dir, 'one.key'));
  });

  it('fails a key file that is not there', async () => {
    const missing = join(s.dir, 'missing.pub');
    expect(await checkTrustedKeys({ unsigned: false, keyFiles: [missing] })).toMatchObject({
      status: 'fail',
      code: 'KS_USAGE',
      detail: `${missing} cannot be read (ENOENT)`,
    });
  });

  it('fails a threshold the keys cannot meet, by the keyring’s own rule', async () => {
    const r = await checkTrustedKeys({ unsigned: false, keyFiles: [pub1], threshold: '2' });
    expect(r).toMatchObject({
      status: 'fail',
      code: 'KS_THRESHOLD_NOT_MET',
      detail: 'a threshold of 2 needs at least 2 distinct trusted keys; 1 given',
    });
  });

  it('warns on --allow-unsigned; fails no key at all, and both at once', async () => {
    expect(await checkTrustedKeys({ unsigned: true, keyFiles: [] })).toMatchObject({ status: 'warn' });
    expect(await checkTrustedKeys({ unsigned: false, keyFiles: [] })).toMatchObject({
      status: 'fail',
      code: 'KS_USAGE',
    });
    expect(await checkTrustedKeys({ unsigned: true, keyFiles: [pub1] })).toMatchObject({
      status: 'fail',
      code: 'KS_USAGE',
    });
  });
});
