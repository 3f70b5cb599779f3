// A signature binds the ref it is meant for (SPEC §6, issue 28 finding 1): `keystonectl sign --ref main` puts
// `ref=refs/heads/main` in the signed trusted comment; a set signed for another ref does not count where it was read
// from another, and with --require-ref a set signed for no ref does not count at all. Through the real CLI, and with
// the real `minisign` binary signing a ref-bound comment.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { buildKeyring } from '../../src/trust/keyring.js';
import { signedRef } from '../../src/trust/minisign.js';
import { TrustError } from '../../src/trust/trust-error.js';
import { verifyRevision } from '../../src/trust/verify-revision.js';
import { runCtl, type CliResult } from '../support/cli-run.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';

const minisign = needs('minisign');
let repo: ExampleRepo;
beforeEach(async () => {
  repo = await exampleRepo();
});
afterEach(() => repo.cleanup());

const keyPath = (name: string, ext: 'key' | 'pub') => join(repo.keyDir, `${name}.${ext}`);
const trustedComments = () =>
  [...readFileSync(join(repo.dir, 'SHA256SUMS.minisig'), 'utf8').matchAll(/^trusted comment: (.*)$/gm)].map(
    (m) => m[1]!,
  );
let clock = Math.floor(Date.now() / 1000) - 3_600;
const ctl = (args: string[]) => runCtl(args, '/', { now: () => ++clock * 1000 });
const sign = (...args: string[]) => ctl(['sign', '--key', keyPath('test', 'key'), '--repo', repo.dir, ...args]);
const verify = (...args: string[]) => ctl(['verify', '--json', '--repo', repo.dir, ...repo.trust, ...args]);

function refusedWith(r: CliResult, code: string): string {
  expect(r.code, r.stdout + r.stderr).toBe(2);
  expect(r.stderr).toContain(`[${code}]`);
  return r.stderr;
}

async function verifyIn(opts: { ref?: string; requireRef?: boolean }): Promise<unknown> {
  const keyring = buildKeyring([{ source: 'test.pub', text: readFileSync(keyPath('test', 'pub'), 'utf8') }], 1);
  try {
    return await verifyRevision(new DirectoryReader(repo.dir), { keyring, now: clock + 10, ...opts });
  } catch (e) {
    if (e instanceof TrustError) return e.code;
    throw e;
  }
}

describe('keystonectl sign --ref', () => {
  it('puts ref=refs/heads/<branch> in the signed trusted comment; a full ref is kept as it is', async () => {
    expect((await sign('--ref', 'main')).code).toBe(0);
    expect(trustedComments()).toEqual([
      expect.stringMatching(/^timestamp:\d+\tfile:SHA256SUMS\thashed\tref=refs\/heads\/main$/),
    ]);
    expect((await sign('--ref', 'refs/heads/release/2026')).code).toBe(0);
    expect(signedRef(trustedComments()[0]!)).toBe('refs/heads/release/2026');
  });

  it('without --ref, signs as before and says the set is not bound to a ref', async () => {
    const r = await sign();
    expect(r.code).toBe(0);
    expect(signedRef(trustedComments()[0]!)).toBeUndefined();
    expect(r.stderr).toContain('not bound to a ref');
  });

  it('refuses a ref that is not a branch name', async () => {
    for (const bad of ['main..x', 'a b', '-x', 'main/', 'x.lock']) expect((await sign('--ref', bad)).code, bad).toBe(2);
  });

  it('--append refuses a ref other than the one the others signed for', async () => {
    expect((await ctl(['keygen', '--out', join(repo.keyDir, 'second'), '--no-password'])).code).toBe(0);
    expect((await sign('--ref', 'main')).code).toBe(0);
    const other = await ctl(['sign', '--key', keyPath('second', 'key'), '--repo', repo.dir, '--append', '--ref', 'pr']);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('refs/heads/main');
    const same = await ctl([
      'sign',
      '--key',
      keyPath('second', 'key'),
      '--repo',
      repo.dir,
      '--append',
      '--ref',
      'main',
    ]);
    expect(same.code, same.stderr).toBe(0);
    expect(trustedComments().map((c) => signedRef(c))).toEqual(['refs/heads/main', 'refs/heads/main']);
  });
});

describe('verification binds the ref', () => {
  it('a set signed for pr is refused where it is read from main (KS_SIGNATURE_WRONG_REF), accepted from pr', async () => {
    await sign('--ref', 'pr');
    expect(await verifyIn({ ref: 'refs/heads/main' })).toBe('KS_SIGNATURE_WRONG_REF');
    expect(await verifyIn({ ref: 'refs/heads/pr' })).toMatchObject({ signers: [expect.any(String)] });
    refusedWith(await verify('--ref', 'main'), 'KS_SIGNATURE_WRONG_REF');
    expect((await verify('--ref', 'pr')).code).toBe(0);
  });

  it('a ref-bound set read from no ref (a directory, a manual apply) is accepted', async () => {
    await sign('--ref', 'main');
    expect(await verifyIn({})).toMatchObject({ threshold: 1 });
    expect((await verify()).code).toBe(0);
  });

  it('--require-ref refuses a set signed for no ref (KS_SIGNATURE_NO_REF) and accepts a bound one', async () => {
    await sign();
    expect(await verifyIn({ ref: 'refs/heads/main' })).toMatchObject({ threshold: 1 });
    expect(await verifyIn({ ref: 'refs/heads/main', requireRef: true })).toBe('KS_SIGNATURE_NO_REF');
    const r = refusedWith(await verify('--ref', 'main', '--require-ref'), 'KS_SIGNATURE_NO_REF');
    expect(r).toContain('keystonectl sign --ref refs/heads/main');
    await sign('--ref', 'main');
    expect((await verify('--ref', 'main', '--require-ref')).code).toBe(0);
  });

  it('two ref= fields make the trusted comment invalid, not unbound', () => {
    expect(signedRef('timestamp:1\tref=refs/heads/main\tref=refs/heads/pr')).toBeNull();
    expect(signedRef('timestamp:1\tfile:SHA256SUMS')).toBeUndefined();
    expect(signedRef('timestamp:1\tmyref=refs/heads/pr')).toBeUndefined();
  });

  it('k of n: a signer bound to another ref does not count towards the threshold', async () => {
    expect((await ctl(['keygen', '--out', join(repo.keyDir, 'second'), '--no-password'])).code).toBe(0);
    await sign('--ref', 'pr');
    // Each key alone signed for pr; a signature for main by the second key would not combine with it (sign refuses
    // to --append across refs), so the set is two signatures for pr.
    expect(
      (await ctl(['sign', '--key', keyPath('second', 'key'), '--repo', repo.dir, '--append', '--ref', 'pr'])).code,
    ).toBe(0);
    const trust = [
      '--trusted-key',
      keyPath('test', 'pub'),
      '--trusted-key',
      keyPath('second', 'pub'),
      '--threshold',
      '2',
    ];
    expect((await ctl(['verify', '--repo', repo.dir, ...trust, '--ref', 'pr'])).code).toBe(0);
    refusedWith(await ctl(['verify', '--repo', repo.dir, ...trust, '--ref', 'main']), 'KS_SIGNATURE_WRONG_REF');
  });
});

describe.skipIf(minisign.skip)(minisign.title('the real minisign binary signs a ref-bound trusted comment'), () => {
  it('minisign -t "…\\tref=refs/heads/main" is accepted for main and refused for pr', async () => {
    await sign(); // SHA256SUMS over the files; its signature is replaced below.
    const secret = keyPath('test', 'key');
    const comment = `timestamp:${clock}\tfile:SHA256SUMS\tref=refs/heads/main`;
    execFileSync(
      'minisign',
      [
        '-S',
        '-s',
        secret,
        '-m',
        join(repo.dir, 'SHA256SUMS'),
        '-x',
        join(repo.dir, 'SHA256SUMS.minisig'),
        '-t',
        comment,
      ],
      {
        // The key has no password, so minisign never reads stdin: writing to it raced minisign's exit (EPIPE).
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    expect(trustedComments()).toEqual([comment]);
    expect((await verify('--ref', 'main', '--require-ref')).code).toBe(0);
    refusedWith(await verify('--ref', 'pr'), 'KS_SIGNATURE_WRONG_REF');
  });
});
