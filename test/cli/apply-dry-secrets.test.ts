// apply-dry and secrets (SPEC §16): a pull request's dry run cannot decrypt, and says `secret pw ciphertext changed`; an
// operator's identity (--identity) tells a new value (`secret pw changed`) from a re-encryption (nothing to do). No value
// is ever printed.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatAgeIdentityFile } from '../../src/identity/age-identity-file.js';
import { encryptTo, newAgeIdentity } from '../../src/secrets/age-codec.js';
import { runCtl } from '../support/cli-run.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';

const PLAN = 'plans/secret-reader.toml';
const VALUE_1 = 'correct-horse-battery-1';
const VALUE_2 = 'correct-horse-battery-2';

let repo: ExampleRepo;
let operatorFile: string;
let target: { identity: string; recipient: string };

async function writeSecret(value: string): Promise<void> {
  writeFileSync(
    join(repo.dir, 'secrets', 'pw.age'),
    await encryptTo([target.recipient], new TextEncoder().encode(value)),
  );
}

beforeEach(async () => {
  repo = await exampleRepo({ signed: false });
  const operator = await newAgeIdentity();
  target = await newAgeIdentity();
  operatorFile = join(repo.dir, '..', `operator-${process.pid}.key`);
  writeFileSync(operatorFile, formatAgeIdentityFile(operator, Date.UTC(2026, 0, 1)), { mode: 0o600 });
  mkdirSync(join(repo.dir, 'secrets', 'keys'), { recursive: true });
  writeFileSync(
    join(repo.dir, 'secrets', 'keys', 't.age'),
    await encryptTo(
      [operator.recipient],
      new TextEncoder().encode(formatAgeIdentityFile(target, Date.UTC(2026, 0, 1))),
    ),
  );
  writeFileSync(
    join(repo.dir, 'recipes', 'secret-reader.toml'),
    '[metadata]\nname = "com.acme.secret-reader"\nversion = "1.0.0"\n\n[lifecycle.run.exec]\ncommand = "/bin/sleep"\nargs = ["1000"]\nenv = { PW = "{{secret.pw}}" }\n',
  );
  writeFileSync(join(repo.dir, PLAN), '[[components]]\nname = "reader"\nrecipe = "recipes/secret-reader.toml"\n');
  await writeSecret(VALUE_1);
  repo.commit('a component that reads a secret');
});
afterEach(() => repo.cleanup());

const dry = (...args: string[]) =>
  runCtl(['apply-dry', PLAN, '--repo', repo.dir, '--allow-unsigned', '--base', 'HEAD', '--json', ...args], '/');
async function reasons(
  ...args: string[]
): Promise<{ noTouch: string[]; reasons: Record<string, string>; text: string }> {
  const r = await dry(...args);
  expect(r.code, r.stderr + r.stdout).toBe(0);
  expect(r.stdout + r.stderr).not.toContain(VALUE_1);
  expect(r.stdout + r.stderr).not.toContain(VALUE_2);
  const j = JSON.parse(r.stdout) as { noTouch: string[]; reasons: Record<string, string> };
  return { ...j, text: r.stdout };
}

describe('apply-dry with secrets', () => {
  it('without an identity: a re-encrypted secret is a ciphertext change', async () => {
    await writeSecret(VALUE_1);
    const r = await reasons();
    expect(r.reasons.reader).toMatch(/secret pw ciphertext changed/);
  });

  it('with the operator identity: a re-encryption of the same value changes nothing', async () => {
    await writeSecret(VALUE_1);
    const r = await reasons('--identity', operatorFile);
    expect(r.noTouch).toContain('reader');
  });

  it('with the operator identity: a new value is `secret pw changed`', async () => {
    await writeSecret(VALUE_2);
    const r = await reasons('--identity', operatorFile);
    expect(r.reasons.reader).toMatch(/secret pw changed/);
    expect(r.reasons.reader).not.toMatch(/ciphertext/);
  });

  it('the identity is read as secret ls reads it: a missing file or an empty variable is no stack trace, two keys are fine', async () => {
    const missing = await dry('--identity', '/nonexistent/operator.key');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      'refused: cannot read the operator identity (--identity /nonexistent/operator.key): ENOENT [KS_SECRET_OPERATOR]',
    );
    expect(missing.stderr).not.toMatch(/unexpected failure|\n\s+at /);
    const viaEnv = await runCtl(
      ['apply-dry', PLAN, '--repo', repo.dir, '--allow-unsigned', '--base', 'HEAD', '--json'],
      '/',
      { env: { KEYSTONE_AGE_IDENTITY: '/nonexistent/operator.key' } },
    );
    expect(viaEnv.code).toBe(2);
    expect(viaEnv.stderr).toContain(
      'cannot read the operator identity (KEYSTONE_AGE_IDENTITY=/nonexistent/operator.key): ENOENT',
    );
    // KEYSTONE_AGE_IDENTITY="" names no identity: compared by ciphertext, as without one.
    await writeSecret(VALUE_1);
    const empty = await runCtl(
      ['apply-dry', PLAN, '--repo', repo.dir, '--allow-unsigned', '--base', 'HEAD', '--json'],
      '/',
      { env: { KEYSTONE_AGE_IDENTITY: '' } },
    );
    expect(empty.code, empty.stderr).toBe(0);
    expect((JSON.parse(empty.stdout) as { reasons: Record<string, string> }).reasons.reader).toMatch(
      /secret pw ciphertext changed/,
    );
    // An identity file with two keys (age-keygen output of two operators, concatenated): the second opens the target key.
    const other = await newAgeIdentity();
    const two = join(repo.dir, '..', `two-${process.pid}.key`);
    writeFileSync(two, formatAgeIdentityFile(other, Date.UTC(2026, 0, 1)) + readFileSync(operatorFile, 'utf8'), {
      mode: 0o600,
    });
    const r = await reasons('--identity', two);
    expect(r.noTouch).toContain('reader');
    // A file that is not an identity is named by line, never quoted.
    writeFileSync(two, 'not-a-key-but-maybe-a-value\n', { mode: 0o600 });
    const bad = await dry('--identity', two);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`the operator identity (--identity ${two}), line 1: not an age X25519 identity`);
    expect(bad.stderr).not.toContain('not-a-key-but-maybe-a-value');
    rmSync(two);
  });

  it('a plan reading a secret whose file is missing is refused, naming it', async () => {
    rmSync(join(repo.dir, 'secrets', 'pw.age'));
    const r = await dry();
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/secret pw: secrets\/pw.age is not in/);
  });
});

describe('apply-dry --fleet with secrets', () => {
  const fleetDry = async (...args: string[]) => {
    const r = await runCtl(
      ['apply-dry', '--fleet', '--repo', repo.dir, '--allow-unsigned', '--base', 'HEAD', '--json', ...args],
      '/',
    );
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout + r.stderr).not.toContain(VALUE_1);
    expect(r.stdout + r.stderr).not.toContain(VALUE_2);
    return (
      JSON.parse(r.stdout) as {
        targets: Array<{ name: string; reconcile: { noTouch: string[]; reasons: Record<string, string> } }>;
      }
    ).targets.find((t) => t.name === 't')!.reconcile;
  };
  beforeEach(() => {
    writeFileSync(join(repo.dir, 'fleet.toml'), `[[targets]]\nname = "t"\nselector = {}\nplan = "${PLAN}"\n`);
    repo.commit('a fleet');
  });

  it('reads the identity as apply-dry does: a missing file is a refusal, not a stack trace', async () => {
    const r = await runCtl(
      [
        'apply-dry',
        '--fleet',
        '--repo',
        repo.dir,
        '--allow-unsigned',
        '--base',
        'HEAD',
        '--json',
        '--identity',
        '/nonexistent/operator.key',
      ],
      '/',
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'cannot read the operator identity (--identity /nonexistent/operator.key): ENOENT [KS_SECRET_OPERATOR]',
    );
  });

  it('tells a re-encryption (with the identity: unchanged) from a new value, per target', async () => {
    await writeSecret(VALUE_1);
    expect((await fleetDry()).reasons.reader).toMatch(/secret pw ciphertext changed/);
    expect((await fleetDry('--identity', operatorFile)).noTouch).toContain('reader');
    await writeSecret(VALUE_2);
    expect((await fleetDry('--identity', operatorFile)).reasons.reader).toMatch(/secret pw changed/);
  });
});
