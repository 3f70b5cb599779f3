// `keystonectl secret set` in-process on a real checkout (test/secrets/secret-fixture.ts): the first secret of a target
// makes its key, wrapped to exactly the enrolled, unrevoked devices of the target and the operators (a forged
// certificate never gets one); the value comes from stdin or --file, is never an argument and never printed. The
// signature over SHA256SUMS is verified first (--trusted-key; fail closed without it), and every file the command
// relies on must be exactly the signed one: fleet.toml, devices/revoked.toml, secrets/operators.txt, the target's
// recipients file — so a key made since the last signature, a planted key, or a swapped recipient is refused.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatAgeIdentityFile } from '../../src/identity/age-identity-file.js';
import { recipientStanzas } from '../../src/secrets/age-header.js';
import { ageFormat, decryptWith, encryptTo, newAgeIdentity } from '../../src/secrets/age-codec.js';
import { formatRecipientsFile, parseRecipientsFile } from '../../src/secrets/recipients-file.js';
import { sha256Hex } from '../../src/trust/sha256sums.js';
import { SecretRepo } from '../secrets/secret-fixture.js';

const VALUE = 'pa55-Wörd\nwith a newline\n';
let repo: SecretRepo;
beforeEach(async () => {
  repo = await SecretRepo.create();
});
afterEach(() => repo.cleanup());

/** Rewrites the SHA256SUMS line of `path` to the digest of its current bytes (added when absent), as an attacker would. */
function forgeSum(path: string): void {
  const line = `${sha256Hex(repo.read(path))}  ${path}\n`;
  const sums = repo.text('SHA256SUMS');
  const re = new RegExp(`^[0-9a-f]{64}  ${path.replace(/[./]/g, '\\$&')}\\n`, 'm');
  repo.write('SHA256SUMS', re.test(sums) ? sums.replace(re, line) : sums + line);
}

/** A refusal: exit 2, the code, nothing printed of the value. */
function refused(r: { code: number; stdout: string; stderr: string }, code = 'KS_SECRET_OPERATOR'): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toContain(`[${code}]`);
  expect(r.stdout + r.stderr).not.toContain('pa55');
}

describe('keystonectl secret set', () => {
  it('makes the target key, wrapped to exactly the enrolled, unrevoked devices of the target and the operators', async () => {
    const r = await repo.set('db_password', ['edge'], VALUE);
    expect(r.code, r.stderr).toBe(0);
    // Who opens the key file: edge-1 and edge-2, the operator; not the revoked edge-3, the forged certificate, nor
    // devices of another target or of none.
    expect(await repo.openers('secrets/keys/edge.age')).toEqual(['edge-1', 'edge-2', 'operator']);
    expect(recipientStanzas(repo.read('secrets/keys/edge.age'))).toEqual(['X25519', 'X25519', 'X25519']);
    const rec = parseRecipientsFile(repo.text('secrets/recipients/edge.txt'), 'edge.txt');
    expect(rec).toMatchObject({
      readers: ['edge-1', 'edge-2'],
      operators: 1,
      operatorRecipients: [repo.operator.recipient],
    });
    expect(repo.text('secrets/recipients/edge.txt')).toMatch(
      /^# keystone target edge: .*\n# readers: edge-1 edge-2\n# operators: 1\n# operator age1[0-9a-z]{58}\nage1[0-9a-z]{58}\n$/,
    );
    // The secret: one stanza (the target's), armored, the exact bytes piped in.
    expect(ageFormat(repo.read('secrets/db_password.age'))).toBe('armored');
    expect(recipientStanzas(repo.read('secrets/db_password.age'))).toEqual(['X25519']);
    expect(await repo.valueFor('db_password', 'edge')).toBe(VALUE);
    // What the operator hears, before anything is written: who the new key goes to, operators by recipient.
    const wrote = r.stdout.indexOf('wrote secrets/db_password.age (armored');
    expect(wrote).toBeGreaterThan(0);
    expect(r.stdout.slice(0, wrote)).toBe(
      `new key for target edge (recipient ${rec.recipient}):\n  readers: edge-1, edge-2 (a new key: all added)\n  operators: ${repo.operator.recipient} (a new key: all added)\n`,
    );
    expect(r.stdout).toContain('readers: edge-1, edge-2; operators: 1');
    expect(r.stdout).toContain('next: keystonectl sign');
    expect(r.stderr).toMatch(
      /warning: devices\/forged-1\.cert gives no key: signed by key [0-9A-F]+, which is not a trusted enrolment key .*\[KS_CERT_UNKNOWN_KEY\]/,
    );
    expect(r.stderr).toContain(
      'warning: devices/edge-3.cert gives no key: the certificate of edge-3 is revoked: stolen [KS_CERT_REVOKED]',
    );
    expect(r.stdout + r.stderr).not.toContain('pa55');
  });

  it('a device named in a target, and several targets: one ciphertext each target opens', async () => {
    const r = await repo.set('mqtt', ['edge', 'lab'], VALUE, ['--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(await repo.openers('secrets/keys/lab.age')).toEqual(['lab-1', 'operator']);
    expect(recipientStanzas(repo.read('secrets/mqtt.age'))).toHaveLength(2);
    expect(await repo.valueFor('mqtt', 'edge')).toBe(VALUE);
    expect(await repo.valueFor('mqtt', 'lab')).toBe(VALUE);
    const json = JSON.parse(r.stdout);
    expect(json).toMatchObject({ secret: 'mqtt', file: 'secrets/mqtt.age', format: 'armored', replaced: false });
    expect(
      json.targets.map((t: { target: string; readers: string[]; created: boolean; operatorRecipients: string[] }) => [
        t.target,
        t.readers,
        t.created,
        t.operatorRecipients,
      ]),
    ).toEqual([
      ['edge', ['edge-1', 'edge-2'], true, [repo.operator.recipient]],
      ['lab', ['lab-1'], true, [repo.operator.recipient]],
    ]);
    expect(r.stdout).not.toContain('pa55');
  });

  it('a target with a key, signed: encrypts to its recipients file without the enrolment key; --file and --binary', async () => {
    expect((await repo.set('a', ['edge'], 'first')).code).toBe(0);
    await repo.sign();
    const key = repo.read('secrets/keys/edge.age');
    writeFileSync(join(repo.root, 'value.bin'), Buffer.from([0, 1, 2, 255, 10]));
    const r = await repo.ctl([
      'secret',
      'set',
      'b',
      '--target',
      'edge',
      '--file',
      join(repo.root, 'value.bin'),
      '--binary',
      ...repo.trustArgs,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(repo.read('secrets/keys/edge.age').equals(key)).toBe(true);
    expect(ageFormat(repo.read('secrets/b.age'))).toBe('binary');
    const plain = await decryptWith([await repo.targetIdentity('edge')], repo.read('secrets/b.age'));
    expect(Buffer.from(plain!)).toEqual(Buffer.from([0, 1, 2, 255, 10]));
    // Set again (secrets/a.age is not the signed one any more: a secret is not an input, it may differ): replaced, same key.
    const again = await repo.set('a', ['edge'], 'second');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('replaced secrets/a.age');
    expect(await repo.valueFor('a', 'edge')).toBe('second');
    // SHA256SUMS now lists a secrets/a.age that is not there any more (another value): only the inputs must match.
    expect(repo.text('SHA256SUMS')).toContain('  secrets/a.age\n');
    const third = await repo.set('c', ['edge'], 'third');
    expect(third.code, third.stderr).toBe(0);
  });

  it('never takes the value as an argument, nor an empty one, nor from an unknown target', async () => {
    const arg = await repo.ctl([
      'secret',
      'set',
      'db',
      'hunter2-value',
      '--target',
      'edge',
      '--enrollment-key',
      repo.enrollPub,
      ...repo.trustArgs,
    ]);
    expect(arg.code).toBe(2);
    expect(arg.stderr).toContain('takes no value argument');
    expect(arg.stderr).toContain('shell history and ps');
    expect(arg.stdout + arg.stderr).not.toContain('hunter2');
    const flag = await repo.ctl(['secret', 'set', 'db', '--target', 'edge', '--value=hunter2-value']);
    expect(flag.code).toBe(2);
    expect(flag.stdout + flag.stderr).not.toContain('hunter2');
    expect(flag.stderr).toContain('never the command line');

    const empty = await repo.set('db', ['edge'], '');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('an empty secret is refused');

    const unknown = await repo.set('db', ['nowhere'], VALUE);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('fleet.toml has no target "nowhere" (its targets: edge, lab, empty)');
    expect(unknown.stderr).toContain('[KS_SECRET_OPERATOR]');

    const noKey = await repo.ctl(['secret', 'set', 'db', '--target', 'edge', ...repo.trustArgs], VALUE);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('give --enrollment-key PUB');
    for (const r of [arg, flag, empty, unknown, noKey]) expect(r.stdout + r.stderr).not.toContain('pa55');
  });

  it('fails closed: neither --trusted-key nor --allow-unsigned is a usage error; an untrusted signature is refused; --allow-unsigned warns', async () => {
    const none = await repo.ctl(['secret', 'set', 'db', '--target', 'edge', '--enrollment-key', repo.enrollPub], VALUE);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(
      'no trusted key: give --trusted-key FILE (repeatable), or --allow-unsigned for development',
    );
    expect(none.stderr).toContain('usage: keystonectl secret set NAME');
    // Signed, but not by a key this command trusts (here the enrolment key, a minisign key too).
    const untrusted = await repo.ctl(
      ['secret', 'set', 'db', '--target', 'edge', '--enrollment-key', repo.enrollPub, '--trusted-key', repo.enrollPub],
      VALUE,
    );
    refused(untrusted, 'KS_UNTRUSTED_KEY');
    // Never signed: says what to sign first.
    rmSync(repo.path('SHA256SUMS.minisig'));
    const unsigned = await repo.set('db', ['edge'], VALUE);
    refused(unsigned, 'KS_UNSIGNED');
    expect(unsigned.stderr).toContain('review and sign them first (keystonectl sign --key KEY)');
    expect(() => repo.read('secrets/db.age')).toThrow();
    const loose = await repo.set('db', ['edge'], VALUE, ['--allow-unsigned']);
    expect(loose.code, loose.stderr).toBe(0);
    expect(loose.stderr).toContain(
      "keystonectl secret set: WARNING: UNSIGNED (--allow-unsigned): SHA256SUMS's signature is not checked",
    );
    expect(loose.stderr).toContain('whoever can push to it decides who reads your secrets');
    const both = await repo.set('db', ['edge'], VALUE, ['--allow-unsigned', ...repo.trustArgs]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--allow-unsigned and --trusted-key exclude each other');
  });

  it('attack: a planted key and recipient for the target, with their SHA256SUMS lines rewritten, are refused', async () => {
    // Whoever can push plants target edge's files, of a key they hold, and lists them in SHA256SUMS.
    const attacker = await newAgeIdentity();
    const signedSums = repo.text('SHA256SUMS');
    repo.write(
      'secrets/keys/edge.age',
      await encryptTo([attacker.recipient], new TextEncoder().encode(formatAgeIdentityFile(attacker, Date.now()))),
    );
    repo.write(
      'secrets/recipients/edge.txt',
      formatRecipientsFile('edge', { recipient: attacker.recipient, readers: ['edge-1', 'edge-2'], operators: [] }),
    );
    forgeSum('secrets/keys/edge.age');
    forgeSum('secrets/recipients/edge.txt');
    const r = await repo.set('db_password', ['edge'], VALUE);
    refused(r, 'KS_SIGNATURE_INVALID');
    expect(() => repo.read('secrets/db_password.age')).toThrow();
    // Without touching SHA256SUMS, the planted files are not the signed ones: refused, saying to review and sign first.
    repo.write('SHA256SUMS', signedSums);
    const planted = await repo.set('db_password', ['edge'], VALUE);
    refused(planted);
    expect(planted.stderr).toContain(
      'secrets/recipients/edge.txt is not in SHA256SUMS: it was added since the last signature',
    );
    expect(planted.stderr).toContain('Sign first');
    expect(() => repo.read('secrets/db_password.age')).toThrow();
  });

  it('a key made in this same unsigned session is refused until it is signed ("sign first")', async () => {
    expect((await repo.set('a', ['edge'], VALUE)).code).toBe(0);
    const b = await repo.set('b', ['edge'], VALUE);
    refused(b);
    expect(b.stderr).toContain(
      'secrets/recipients/edge.txt is not in SHA256SUMS: it was added since the last signature',
    );
    expect(b.stderr).toContain(
      "target edge's key was made since (by a secret set or rekey of yours, or by anyone who can push)",
    );
    expect(b.stderr).toContain(
      'Sign first: review git diff and git status secrets/, keystonectl sign --key KEY, then run this again: nothing was written',
    );
    expect(() => repo.read('secrets/b.age')).toThrow();
    await repo.sign();
    expect((await repo.set('b', ['edge'], VALUE)).code).toBe(0);
    expect(await repo.valueFor('b', 'edge')).toBe(VALUE);
  });

  it("refuses a recipients file changed since the last signature, a second recipient, and one that is not the key's own", async () => {
    expect((await repo.set('a', ['edge'], VALUE)).code).toBe(0);
    await repo.sign();
    const before = repo.read('secrets/a.age');
    const attacker = await newAgeIdentity();
    const original = repo.text('secrets/recipients/edge.txt');
    repo.write('secrets/recipients/edge.txt', original.replace(/^age1.*$/m, attacker.recipient));
    const r = await repo.set('a', ['edge'], 'new value');
    refused(r);
    expect(r.stderr).toContain(
      'secrets/recipients/edge.txt is not the file SHA256SUMS lists: it was changed since the last signature',
    );
    expect(r.stderr).toContain('git diff secrets/recipients/edge.txt');
    expect(repo.read('secrets/a.age').equals(before)).toBe(true);
    // Gone since the last signature (both files): restored or rekeyed, not quietly replaced by a new key.
    const key = repo.read('secrets/keys/edge.age');
    rmSync(repo.path('secrets/recipients/edge.txt'));
    rmSync(repo.path('secrets/keys/edge.age'));
    const gone = await repo.set('b', ['edge'], VALUE);
    refused(gone);
    expect(gone.stderr).toContain(
      'secrets/recipients/edge.txt is listed in SHA256SUMS but is not there: it was removed since the last signature',
    );
    expect(gone.stderr).toContain('restore it (git checkout -- secrets/recipients/edge.txt secrets/keys/edge.age)');
    repo.write('secrets/keys/edge.age', key);

    // Unsigned (development), a second recipient is refused outright, and with the operator's identity a swapped one too.
    repo.write('secrets/recipients/edge.txt', `${original}${attacker.recipient}\n`);
    const two = await repo.set('b', ['edge'], VALUE, ['--allow-unsigned']);
    refused(two);
    expect(two.stderr).toContain('holds 2 recipients: a target has exactly one');
    repo.write('secrets/recipients/edge.txt', original.replace(/^age1.*$/m, attacker.recipient));
    const swapped = await repo.set('b', ['edge'], VALUE, ['--allow-unsigned', '--identity', repo.operator.keyFile]);
    refused(swapped);
    expect(swapped.stderr).toContain('the recipient was swapped');
  });

  it('refuses to compute readers from a fleet.toml, devices/revoked.toml or operators file that is not the signed one', async () => {
    const cases: Array<{ what: string; edit: () => void; says: string }> = [
      // Target edge takes hamburg-1 too: the attacker's device would get the key.
      {
        what: 'fleet.toml changed',
        edit: () =>
          repo.write('fleet.toml', repo.text('fleet.toml').replace('selector = { site = "berlin" }', 'selector = {}')),
        says: 'fleet.toml is not the file SHA256SUMS lists: it was changed since the last signature, and it decides which devices each target takes',
      },
      // Un-revoking the stolen edge-3: by editing the list, or by removing it.
      {
        what: 'revocation taken out',
        edit: () => repo.write('devices/revoked.toml', '# nothing revoked\n'),
        says: 'devices/revoked.toml is not the file SHA256SUMS lists: it was changed since the last signature, and it says which devices are revoked',
      },
      {
        what: 'revocations removed',
        edit: () => rmSync(repo.path('devices/revoked.toml')),
        says: 'devices/revoked.toml is listed in SHA256SUMS but is not there: it was removed since the last signature',
      },
      // The attacker's recipient among the operators: it would open every key made from now on.
      {
        what: 'operator appended',
        edit: () => repo.write('secrets/operators.txt', `${repo.text('secrets/operators.txt')}age1${'q'.repeat(58)}\n`),
        says: 'secrets/operators.txt is not the file SHA256SUMS lists: it was changed since the last signature, and every target key is wrapped to the recipients it lists',
      },
      {
        what: 'operators removed',
        edit: () => rmSync(repo.path('secrets/operators.txt')),
        says: 'secrets/operators.txt is listed in SHA256SUMS but is not there',
      },
    ];
    for (const c of cases) {
      const saved = new Map(
        ['fleet.toml', 'devices/revoked.toml', 'secrets/operators.txt'].map((p) => [p, repo.read(p)]),
      );
      c.edit();
      const r = await repo.set('db_password', ['edge'], VALUE);
      refused(r);
      expect(r.stderr, c.what).toContain(c.says);
      expect(r.stderr, c.what).toContain('Review it first (git diff');
      expect(r.stderr, c.what).toContain('sign (keystonectl sign --key KEY), then run this again: nothing was written');
      expect(() => repo.read('secrets/keys/edge.age'), c.what).toThrow();
      for (const [p, bytes] of saved) repo.write(p, bytes);
    }
    // Not listed, and there: added since the last signature.
    const revoked = repo.read('devices/revoked.toml');
    rmSync(repo.path('devices/revoked.toml'));
    await repo.sign();
    repo.write('devices/revoked.toml', revoked);
    const added = await repo.set('db_password', ['edge'], VALUE);
    refused(added);
    expect(added.stderr).toContain('devices/revoked.toml is not in SHA256SUMS: it was added since the last signature');
    // Not listed and not there: nothing revoked, which is what the signed set says.
    rmSync(repo.path('devices/revoked.toml'));
    const fine = await repo.set('db_password', ['edge'], VALUE);
    expect(fine.code, fine.stderr).toBe(0);
    expect(await repo.openers('secrets/keys/edge.age')).toEqual(['edge-1', 'edge-2', 'edge-3', 'operator']);
    // So is an operators file added since.
    const operators = repo.read('secrets/operators.txt');
    rmSync(repo.path('secrets/operators.txt'));
    await repo.sign();
    repo.write('secrets/operators.txt', operators);
    const addedOperators = await repo.set('db_password', ['lab'], VALUE);
    refused(addedOperators);
    expect(addedOperators.stderr).toContain(
      'secrets/operators.txt is not in SHA256SUMS: it was added since the last signature',
    );
    await repo.sign();
    // Reviewed and signed, a changed operators file is taken, and the new operator shows before anything is written.
    await repo.sign();
    const second = await repo.identity('second-operator');
    repo.write('secrets/operators.txt', `${repo.text('secrets/operators.txt')}${second.recipient}\n`);
    await repo.sign();
    const lab = await repo.set('db_password', ['lab'], VALUE);
    expect(lab.code, lab.stderr).toBe(0);
    expect(lab.stdout).toContain(`  operators: ${repo.operator.recipient}, ${second.recipient} (a new key: all added)`);
  });

  it('refuses an operator whose signed recipient cannot open the target key (replaced, or made before the operator was added)', async () => {
    expect((await repo.set('a', ['edge'], VALUE)).code).toBe(0);
    const second = await repo.identity('second-operator');
    repo.write('secrets/operators.txt', `${repo.text('secrets/operators.txt')}${second.recipient}\n`);
    await repo.sign();
    const r = await repo.set('b', ['edge'], VALUE, ['--identity', second.keyFile]);
    refused(r);
    expect(r.stderr).toContain(
      `your identity (--identity ${second.keyFile}) is an operator's (${second.recipient} is in secrets/operators.txt), yet it cannot open target edge's key (secrets/keys/edge.age)`,
    );
    expect(r.stderr).toContain('keystonectl secret rewrap --target edge');
    expect(() => repo.read('secrets/b.age')).toThrow();
    // An identity that is no operator's cannot tell: the signed recipient is used.
    const device = await repo.set('b', ['edge'], VALUE, ['--identity', repo.device('lab-1').keyFile]);
    expect(device.code, device.stderr).toBe(0);
    // The first operator opens the key: fine.
    expect((await repo.set('c', ['edge'], VALUE, ['--identity', repo.operator.keyFile])).code).toBe(0);
  });

  it('refuses a target nobody could read: no enrolled device and no operator', async () => {
    rmSync(repo.path('secrets/operators.txt'));
    await repo.sign();
    const r = await repo.set('db', ['empty'], VALUE);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no one could read target empty's key");
  });

  it('a secret set for a target is encrypted so that only the target key opens it', async () => {
    expect((await repo.set('a', ['lab'], VALUE)).code).toBe(0);
    expect((await repo.set('b', ['edge'], VALUE)).code).toBe(0);
    expect(await repo.valueFor('a', 'edge')).toBeUndefined();
    expect(await repo.valueFor('b', 'lab')).toBeUndefined();
    // Devices open only their target's key, never a secret directly.
    expect(await decryptWith([repo.device('lab-1').identity], repo.read('secrets/a.age'))).toBeUndefined();
  });
});
