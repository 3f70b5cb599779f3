// `keystonectl secret set` in-process on a real checkout (test/secrets/secret-fixture.ts): the first secret of a target
// makes its key, wrapped to exactly the enrolled, unrevoked devices the target takes and the operators (a forged
// certificate never gets one); the value comes from stdin or --file, is never an argument and never printed; a
// recipients file that is not the signed one, or not the key's own, is refused.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { recipientStanzas } from '../../src/secrets/age-header.js';
import { ageFormat, decryptWith, newAgeIdentity } from '../../src/secrets/age-codec.js';
import { parseRecipientsFile } from '../../src/secrets/recipients-file.js';
import { SecretRepo } from '../secrets/secret-fixture.js';

const VALUE = 'pa55-Wörd\nwith a newline\n';
let repo: SecretRepo;
beforeEach(async () => {
  repo = await SecretRepo.create();
});
afterEach(() => repo.cleanup());

describe('keystonectl secret set', () => {
  it('makes the target key, wrapped to exactly the enrolled, unrevoked devices of the target and the operators', async () => {
    const r = await repo.set('db_password', ['edge'], VALUE);
    expect(r.code, r.stderr).toBe(0);
    // Who opens the key file: edge-1 and edge-2, the operator; not the revoked edge-3, the forged certificate, nor
    // devices of another target or of none.
    expect(await repo.openers('secrets/keys/edge.age')).toEqual(['edge-1', 'edge-2', 'operator']);
    expect(recipientStanzas(repo.read('secrets/keys/edge.age'))).toEqual(['X25519', 'X25519', 'X25519']);
    const rec = parseRecipientsFile(repo.text('secrets/recipients/edge.txt'), 'edge.txt');
    expect(rec).toMatchObject({ readers: ['edge-1', 'edge-2'], operators: 1 });
    expect(repo.text('secrets/recipients/edge.txt')).toMatch(/^# keystone target edge: .*\n# readers: edge-1 edge-2\n# operators: 1\nage1[0-9a-z]{58}\n$/);
    // The secret: one stanza (the target's), armored, the exact bytes piped in.
    expect(ageFormat(repo.read('secrets/db_password.age'))).toBe('armored');
    expect(recipientStanzas(repo.read('secrets/db_password.age'))).toEqual(['X25519']);
    expect(await repo.valueFor('db_password', 'edge')).toBe(VALUE);
    // What the operator hears: what was written, who reads, what gave no key and why; never the value.
    expect(r.stdout).toContain('wrote secrets/db_password.age (armored');
    expect(r.stdout).toContain('readers: edge-1, edge-2; operators: 1');
    expect(r.stdout).toContain('next: keystonectl sign');
    expect(r.stderr).toMatch(/warning: devices\/forged-1\.cert gives no key: signed by key [0-9A-F]+, which is not a trusted enrolment key .*\[KS_CERT_UNKNOWN_KEY\]/);
    expect(r.stderr).toContain('warning: devices/edge-3.cert gives no key: the certificate of edge-3 is revoked: stolen [KS_CERT_REVOKED]');
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
    expect(json.targets.map((t: { target: string; readers: string[]; created: boolean }) => [t.target, t.readers, t.created])).toEqual([
      ['edge', ['edge-1', 'edge-2'], true],
      ['lab', ['lab-1'], true],
    ]);
    expect(r.stdout).not.toContain('pa55');
  });

  it('a target with a key: encrypts to its recipients file without the enrolment key; --file and --binary', async () => {
    expect((await repo.set('a', ['edge'], 'first')).code).toBe(0);
    const key = repo.read('secrets/keys/edge.age');
    writeFileSync(join(repo.root, 'value.bin'), Buffer.from([0, 1, 2, 255, 10]));
    const r = await repo.ctl(['secret', 'set', 'b', '--target', 'edge', '--file', join(repo.root, 'value.bin'), '--binary']);
    expect(r.code, r.stderr).toBe(0);
    expect(repo.read('secrets/keys/edge.age').equals(key)).toBe(true);
    expect(ageFormat(repo.read('secrets/b.age'))).toBe('binary');
    const plain = await decryptWith([await repo.targetIdentity('edge')], repo.read('secrets/b.age'));
    expect(Buffer.from(plain!)).toEqual(Buffer.from([0, 1, 2, 255, 10]));
    // Set again: replaced, same key.
    const again = await repo.set('a', ['edge'], 'second');
    expect(again.stdout).toContain('replaced secrets/a.age');
    expect(await repo.valueFor('a', 'edge')).toBe('second');
  });

  it('never takes the value as an argument, nor an empty one, nor from an unknown target', async () => {
    const arg = await repo.ctl(['secret', 'set', 'db', 'hunter2-value', '--target', 'edge', '--enrollment-key', repo.enrollPub]);
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

    const noKey = await repo.ctl(['secret', 'set', 'db', '--target', 'edge'], VALUE);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('give --enrollment-key PUB');
    for (const r of [arg, flag, empty, unknown, noKey]) expect(r.stdout + r.stderr).not.toContain('pa55');
  });

  it('refuses to make a key while the signed operators file was changed: a recipient slipped in would get every key', async () => {
    const signed = await repo.ctl(['sign', '--key', join(repo.root, 'keys/sign.key')]);
    expect(signed.code, signed.stderr).toBe(0);
    const attacker = await newAgeIdentity();
    repo.write('secrets/operators.txt', `${repo.text('secrets/operators.txt')}${attacker.recipient}\n`);
    const r = await repo.set('db_password', ['edge'], VALUE);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('secrets/operators.txt is not the file SHA256SUMS lists');
    expect(r.stderr).toContain('[KS_SECRET_OPERATOR]');
    expect(() => repo.read('secrets/keys/edge.age')).toThrow();
    // Reviewed and signed, the same operators file is taken.
    expect((await repo.ctl(['sign', '--key', join(repo.root, 'keys/sign.key')])).code).toBe(0);
    expect((await repo.set('db_password', ['edge'], VALUE)).code).toBe(0);
    expect(await repo.openers('secrets/keys/edge.age')).toEqual(['edge-1', 'edge-2', 'operator']);
  });

  it('refuses a target nobody could read: no enrolled device and no operator', async () => {
    rmSync(repo.path('secrets/operators.txt'));
    const r = await repo.set('db', ['empty'], VALUE);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no one could read target empty's key");
  });

  it('refuses a recipients file changed since the last signature, and one that is not the key\'s own', async () => {
    expect((await repo.set('a', ['edge'], VALUE)).code).toBe(0);
    const signed = await repo.ctl(['sign', '--key', join(repo.root, 'keys/sign.key')]);
    expect(signed.code, signed.stderr).toBe(0);
    const before = repo.read('secrets/a.age');
    const attacker = await newAgeIdentity();
    const original = repo.text('secrets/recipients/edge.txt');
    repo.write('secrets/recipients/edge.txt', original.replace(/^age1.*$/m, attacker.recipient));
    const r = await repo.set('a', ['edge'], 'new value');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('secrets/recipients/edge.txt is not the file SHA256SUMS lists');
    expect(r.stderr).toContain('[KS_SECRET_OPERATOR]');
    expect(repo.read('secrets/a.age').equals(before)).toBe(true);

    // Unsigned, a second recipient is refused outright, and with the operator's identity a swapped one too.
    const sums = repo.text('SHA256SUMS');
    rmSync(repo.path('SHA256SUMS'));
    repo.write('secrets/recipients/edge.txt', `${original}${attacker.recipient}\n`);
    const two = await repo.set('b', ['edge'], VALUE);
    expect(two.code).toBe(2);
    expect(two.stderr).toContain('holds 2 recipients: a target has exactly one');
    repo.write('secrets/recipients/edge.txt', original.replace(/^age1.*$/m, attacker.recipient));
    const swapped = await repo.set('b', ['edge'], VALUE, ['--identity', repo.operator.keyFile]);
    expect(swapped.code).toBe(2);
    expect(swapped.stderr).toContain('the recipient was swapped');
    // Without the identity, and a signature that does not list the file, it can only warn.
    repo.write('SHA256SUMS', sums.replace(/^.*secrets\/recipients\/edge\.txt\n/m, ''));
    const unlisted = await repo.set('b', ['edge'], VALUE);
    expect(unlisted.code).toBe(0);
    expect(unlisted.stderr).toContain('warning: secrets/recipients/edge.txt is not in SHA256SUMS (added since the last signature)');
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
