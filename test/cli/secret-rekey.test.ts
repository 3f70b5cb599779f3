// `keystonectl secret rekey --target T` in-process on a real checkout: a new target key wrapped to the current devices
// (a new enrolment added, a revocation removed), every secret of the target re-encrypted (same value, new
// ciphertext, still for the other targets it was for), the others untouched; a revoked device opens neither the new
// key nor a secret set afterwards. Refused without an identity that opens the old key, and rather than dropping a
// recipient the operator cannot tell apart.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { recipientStanzas } from '../../src/secrets/age-header.js';
import { decryptWith, encryptTo, newAgeIdentity } from '../../src/secrets/age-codec.js';
import { parseRecipientsFile } from '../../src/secrets/recipients-file.js';
import { SecretRepo } from '../secrets/secret-fixture.js';

let repo: SecretRepo;
beforeEach(async () => {
  repo = await SecretRepo.create();
});
afterEach(() => repo.cleanup());

const rekey = (target: string, more: string[] = []) => repo.ctl(['secret', 'rekey', '--target', target, '--enrollment-key', repo.enrollPub, '--identity', repo.operator.keyFile, ...more]);
const recipientOf = (target: string) => parseRecipientsFile(repo.text(`secrets/recipients/${target}.txt`), target).recipient;

describe('keystonectl secret rekey', () => {
  it('a new key for the current devices; every secret of the target re-encrypted, the others untouched', async () => {
    for (const [name, targets] of [['db', ['edge']], ['both', ['edge', 'lab']], ['labonly', ['lab']]] as const) expect((await repo.set(name, [...targets], `value of ${name}`)).code).toBe(0);
    const old = { recipient: recipientOf('edge'), db: repo.read('secrets/db.age'), both: repo.read('secrets/both.age'), labonly: repo.read('secrets/labonly.age'), key: repo.read('secrets/keys/edge.age') };
    const oldIdentity = await repo.targetIdentity('edge');
    // A device enrolled since, and one revoked since.
    await repo.enrol('edge-4', { site: 'berlin' });
    repo.write('devices/revoked.toml', `${repo.text('devices/revoked.toml')}\n[[revoked]]\ndevice = "edge-2"\nreason = "sold"\n`);

    const r = await rekey('edge');
    expect(r.code, r.stderr).toBe(0);
    expect(recipientOf('edge')).not.toBe(old.recipient);
    expect(await repo.openers('secrets/keys/edge.age')).toEqual(['edge-1', 'edge-4', 'operator']);
    expect(parseRecipientsFile(repo.text('secrets/recipients/edge.txt'), 'edge.txt')).toMatchObject({ readers: ['edge-1', 'edge-4'], operators: 1 });
    // Same values, new ciphertexts, for the same targets; the old key opens none of them; lab's own is untouched.
    for (const name of ['db', 'both'] as const) {
      expect(repo.read(`secrets/${name}.age`).equals(old[name])).toBe(false);
      expect(await repo.valueFor(name, 'edge')).toBe(`value of ${name}`);
      expect(await decryptWith([oldIdentity], repo.read(`secrets/${name}.age`))).toBeUndefined();
    }
    expect(await repo.valueFor('both', 'lab')).toBe('value of both');
    expect(recipientStanzas(repo.read('secrets/both.age'))).toHaveLength(2);
    expect(repo.read('secrets/labonly.age').equals(old.labonly)).toBe(true);
    expect(r.stdout).toContain(`rekeyed target edge: recipient ${recipientOf('edge')} (was ${old.recipient})`);
    expect(r.stdout).toContain('readers: edge-1, edge-4 (added: edge-4; removed: edge-2)');
    expect(r.stdout).toContain('re-encrypted 2 secrets: both (also for lab), db');
    expect(r.stdout).toContain('note: edge-2 could read these values until now');
    expect(r.stdout + r.stderr).not.toContain('value of');

    // The device revoked: neither the new key file nor a secret set after the rekey opens for it.
    expect((await repo.set('after', ['edge'], 'set after the rekey')).code).toBe(0);
    const revoked = repo.device('edge-2').identity;
    expect(await decryptWith([revoked], repo.read('secrets/keys/edge.age'))).toBeUndefined();
    const keyItHad = (await decryptWith([revoked], old.key))!;
    const itsOldKey = new TextDecoder().decode(keyItHad).split('\n').find((l) => l.startsWith('AGE-SECRET-KEY-1'))!;
    expect(itsOldKey).toBe(oldIdentity);
    expect(await decryptWith([itsOldKey], repo.read('secrets/after.age'))).toBeUndefined();
    expect(await decryptWith([itsOldKey], repo.read('secrets/db.age'))).toBeUndefined();
  });

  it('--json; a target without a key gets one, with no identity needed', async () => {
    const r = await repo.ctl(['secret', 'rekey', '--target', 'lab', '--enrollment-key', repo.enrollPub, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json).toMatchObject({ target: 'lab', created: true, previousRecipient: null, readers: ['lab-1'], added: null, removed: null, operators: 1, reencrypted: [] });
    expect(json.recipient).toBe(recipientOf('lab'));
    expect(await repo.openers('secrets/keys/lab.age')).toEqual(['lab-1', 'operator']);
    const again = await rekey('lab', ['--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ created: false, previousRecipient: json.recipient, added: [], removed: [] });
  });

  it('needs an identity that opens the old key, and says so plainly', async () => {
    expect((await repo.set('db', ['edge'], 'v')).code).toBe(0);
    const key = repo.read('secrets/keys/edge.age');
    const none = await repo.ctl(['secret', 'rekey', '--target', 'edge', '--enrollment-key', repo.enrollPub]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('needs its current key (secrets/keys/edge.age): give --identity FILE (or KEYSTONE_AGE_IDENTITY=FILE)');
    const other = await repo.ctl(['secret', 'rekey', '--target', 'edge', '--enrollment-key', repo.enrollPub, '--identity', repo.device('lab-1').keyFile]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(`your identity (--identity ${repo.device('lab-1').keyFile}, recipient ${repo.device('lab-1').recipient}) cannot open secrets/keys/edge.age`);
    // KEYSTONE_AGE_IDENTITY names the file when --identity does not.
    const env = await repo.ctl(['secret', 'rekey', '--target', 'edge', '--enrollment-key', repo.enrollPub], undefined, { env: { KEYSTONE_AGE_IDENTITY: repo.operator.keyFile } });
    expect(env.code, env.stderr).toBe(0);
    expect(repo.read('secrets/keys/edge.age').equals(key)).toBe(false);
    const noKey = await repo.ctl(['secret', 'rekey', '--target', 'edge', '--identity', repo.operator.keyFile]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('--enrollment-key PUB is required');
  });

  it('refuses, writing nothing, when a secret is also for a recipient the operator cannot tell apart', async () => {
    expect((await repo.set('db', ['edge'], 'v')).code).toBe(0);
    const stranger = await newAgeIdentity();
    // As `age -R secrets/recipients/edge.txt -r age1stranger…` would make it.
    repo.write('secrets/shared.age', await encryptTo([recipientOf('edge'), stranger.recipient], new TextEncoder().encode('shared value')));
    const before = { key: repo.read('secrets/keys/edge.age'), db: repo.read('secrets/db.age'), rec: repo.text('secrets/recipients/edge.txt') };
    const r = await rekey('edge');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('rekey of target edge refused, nothing was written');
    expect(r.stderr).toContain('secret shared (secrets/shared.age) is encrypted to 2 recipients, and one is a target you can open (edge)');
    expect(r.stderr).toContain('[KS_SECRET_OPERATOR]');
    expect(r.stdout + r.stderr).not.toContain('shared value');
    expect(repo.read('secrets/keys/edge.age').equals(before.key)).toBe(true);
    expect(repo.read('secrets/db.age').equals(before.db)).toBe(true);
    expect(repo.text('secrets/recipients/edge.txt')).toBe(before.rec);
  });
});

describe('keystonectl secret rewrap', () => {
  const rewrap = (target: string) => repo.ctl(['secret', 'rewrap', '--target', target, '--enrollment-key', repo.enrollPub, '--identity', repo.operator.keyFile]);

  it('after an enrolment: the same key to the current devices, one file rewritten, no secret re-encrypted', async () => {
    expect((await repo.set('db', ['edge'], 'value of db')).code).toBe(0);
    const before = { recipient: recipientOf('edge'), db: repo.read('secrets/db.age'), identity: await repo.targetIdentity('edge') };
    await repo.enrol('edge-4', { site: 'berlin' });
    const r = await rewrap('edge');
    expect(r.code, r.stderr).toBe(0);
    expect(recipientOf('edge')).toBe(before.recipient);
    expect(await repo.targetIdentity('edge')).toBe(before.identity);
    expect(await repo.openers('secrets/keys/edge.age')).toEqual(['edge-1', 'edge-2', 'edge-4', 'operator']);
    expect(repo.read('secrets/db.age').equals(before.db)).toBe(true);
    expect(r.stdout).toContain(`rewrapped target edge's key (recipient ${before.recipient}, unchanged)`);
    expect(r.stdout).toContain('readers: edge-1, edge-2, edge-4 (added: edge-4; removed: none)');
    expect(r.stdout).not.toContain('re-encrypted');
    expect(r.stdout + r.stderr).not.toContain('value of db');
  });

  it('refused when a device would lose the key it knows (revoked): only a rekey cuts it off; refused without a key', async () => {
    expect((await repo.set('db', ['edge'], 'value of db')).code).toBe(0);
    const key = repo.read('secrets/keys/edge.age');
    repo.write('devices/revoked.toml', `${repo.text('devices/revoked.toml')}\n[[revoked]]\ndevice = "edge-2"\nreason = "sold"\n`);
    const r = await rewrap('edge');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('a rewrap of target edge would drop edge-2');
    expect(r.stderr).toContain('[KS_SECRET_OPERATOR]');
    expect(repo.read('secrets/keys/edge.age').equals(key)).toBe(true);
    const none = await rewrap('lab');
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('target lab has no key yet');
  });
});
