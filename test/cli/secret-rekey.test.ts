// `keystonectl secret rekey --target T` in-process on a real checkout: a new target key wrapped to the current devices
// (a new enrolment added, a revocation removed), every secret of the target re-encrypted (same value, new
// ciphertext, still for the other targets it was for), the others untouched; a revoked device opens neither the new
// key nor a secret set afterwards. Refused without an identity that opens the old key, rather than dropping a
// recipient the operator cannot tell apart, and unless what it relies on is signed: the old key file, fleet.toml,
// devices/revoked.toml, secrets/operators.txt (and for a rewrap the recipients file).
import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatAgeIdentityFile } from '../../src/identity/age-identity-file.js';
import { recipientStanzas } from '../../src/secrets/age-header.js';
import { decryptWith, encryptTo, newAgeIdentity } from '../../src/secrets/age-codec.js';
import { parseRecipientsFile } from '../../src/secrets/recipients-file.js';
import { sha256Hex } from '../../src/trust/sha256sums.js';
import { SecretRepo } from '../secrets/secret-fixture.js';

let repo: SecretRepo;
beforeEach(async () => {
  repo = await SecretRepo.create();
});
afterEach(() => repo.cleanup());

const rekey = (target: string, more: string[] = []) => repo.rekey(target, more);
const recipientOf = (target: string) =>
  parseRecipientsFile(repo.text(`secrets/recipients/${target}.txt`), target).recipient;
/** `secret set`, then signed: the next command takes the key it made. */
async function setSigned(name: string, targets: string[], value: string): Promise<void> {
  const r = await repo.set(name, targets, value);
  expect(r.code, r.stderr).toBe(0);
  await repo.sign();
}
function refused(r: { code: number; stderr: string }, code = 'KS_SECRET_OPERATOR'): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toContain(`[${code}]`);
}

describe('keystonectl secret rekey', () => {
  it('a new key for the current devices; every secret of the target re-encrypted, the others untouched', async () => {
    for (const [name, targets] of [
      ['db', ['edge']],
      ['both', ['edge', 'lab']],
      ['labonly', ['lab']],
    ] as const)
      await setSigned(name, [...targets], `value of ${name}`);
    const old = {
      recipient: recipientOf('edge'),
      db: repo.read('secrets/db.age'),
      both: repo.read('secrets/both.age'),
      labonly: repo.read('secrets/labonly.age'),
      key: repo.read('secrets/keys/edge.age'),
    };
    const oldIdentity = await repo.targetIdentity('edge');
    // A device enrolled since, and one revoked since (reviewed and signed, as the rekey takes only a signed list).
    await repo.enrol('edge-4', { site: 'berlin' });
    repo.write(
      'devices/revoked.toml',
      `${repo.text('devices/revoked.toml')}\n[[revoked]]\ndevice = "edge-2"\nreason = "sold"\n`,
    );
    await repo.sign();

    const r = await rekey('edge');
    expect(r.code, r.stderr).toBe(0);
    expect(recipientOf('edge')).not.toBe(old.recipient);
    expect(await repo.openers('secrets/keys/edge.age')).toEqual(['edge-1', 'edge-4', 'operator']);
    expect(parseRecipientsFile(repo.text('secrets/recipients/edge.txt'), 'edge.txt')).toMatchObject({
      readers: ['edge-1', 'edge-4'],
      operators: 1,
    });
    // Same values, new ciphertexts, for the same targets; the old key opens none of them; lab's own is untouched.
    for (const name of ['db', 'both'] as const) {
      expect(repo.read(`secrets/${name}.age`).equals(old[name])).toBe(false);
      expect(await repo.valueFor(name, 'edge')).toBe(`value of ${name}`);
      expect(await decryptWith([oldIdentity], repo.read(`secrets/${name}.age`))).toBeUndefined();
    }
    expect(await repo.valueFor('both', 'lab')).toBe('value of both');
    expect(recipientStanzas(repo.read('secrets/both.age'))).toHaveLength(2);
    expect(repo.read('secrets/labonly.age').equals(old.labonly)).toBe(true);
    // Who the key goes to, against the recipients file, first; then what was written.
    expect(r.stdout).toMatch(
      new RegExp(
        `^target edge's new key \\(recipient age1\\w+\\) goes to:\\n  readers: edge-1, edge-4 \\(added: edge-4; removed: edge-2\\)\\n  operators: ${repo.operator.recipient} \\(unchanged\\)\\nrekeyed target edge`,
      ),
    );
    expect(r.stdout).toContain(`rekeyed target edge: recipient ${recipientOf('edge')} (was ${old.recipient})`);
    expect(r.stdout).toContain('re-encrypted 2 secrets: both (also for lab), db');
    expect(r.stdout).toContain('note: edge-2 could read these values until now');
    expect(r.stdout + r.stderr).not.toContain('value of');

    // The device revoked: neither the new key file nor a secret set after the rekey (and its signature) opens for it.
    await repo.sign();
    await setSigned('after', ['edge'], 'set after the rekey');
    const revoked = repo.device('edge-2').identity;
    expect(await decryptWith([revoked], repo.read('secrets/keys/edge.age'))).toBeUndefined();
    const keyItHad = (await decryptWith([revoked], old.key))!;
    const itsOldKey = new TextDecoder()
      .decode(keyItHad)
      .split('\n')
      .find((l) => l.startsWith('AGE-SECRET-KEY-1'))!;
    expect(itsOldKey).toBe(oldIdentity);
    expect(await decryptWith([itsOldKey], repo.read('secrets/after.age'))).toBeUndefined();
    expect(await decryptWith([itsOldKey], repo.read('secrets/db.age'))).toBeUndefined();
  });

  it('--json; a target without a key gets one, with no identity needed', async () => {
    const r = await repo.ctl([
      'secret',
      'rekey',
      '--target',
      'lab',
      '--enrollment-key',
      repo.enrollPub,
      '--json',
      ...repo.trustArgs,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json).toMatchObject({
      target: 'lab',
      created: true,
      previousRecipient: null,
      readers: ['lab-1'],
      added: null,
      removed: null,
      operators: 1,
      operatorRecipients: [repo.operator.recipient],
      reencrypted: [],
    });
    expect(json.recipient).toBe(recipientOf('lab'));
    expect(await repo.openers('secrets/keys/lab.age')).toEqual(['lab-1', 'operator']);
    // The key it made is used only once signed.
    const unsigned = await rekey('lab', ['--json']);
    refused(unsigned);
    expect(unsigned.stderr).toContain(
      'secrets/keys/lab.age is not in SHA256SUMS: it was added since the last signature',
    );
    await repo.sign();
    const again = await rekey('lab', ['--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({
      created: false,
      previousRecipient: json.recipient,
      added: [],
      removed: [],
      operatorsAdded: [],
      operatorsRemoved: [],
    });
  });

  it('needs an identity that opens the old key, and says so plainly', async () => {
    await setSigned('db', ['edge'], 'v');
    const key = repo.read('secrets/keys/edge.age');
    const none = await repo.ctl([
      'secret',
      'rekey',
      '--target',
      'edge',
      '--enrollment-key',
      repo.enrollPub,
      ...repo.trustArgs,
    ]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(
      'needs its current key (secrets/keys/edge.age): give --identity FILE (or KEYSTONE_AGE_IDENTITY=FILE)',
    );
    const other = await repo.ctl([
      'secret',
      'rekey',
      '--target',
      'edge',
      '--enrollment-key',
      repo.enrollPub,
      '--identity',
      repo.device('lab-1').keyFile,
      ...repo.trustArgs,
    ]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(
      `your identity (--identity ${repo.device('lab-1').keyFile}, recipient ${repo.device('lab-1').recipient}) cannot open secrets/keys/edge.age`,
    );
    // KEYSTONE_AGE_IDENTITY names the file when --identity does not.
    const env = await repo.ctl(
      ['secret', 'rekey', '--target', 'edge', '--enrollment-key', repo.enrollPub, ...repo.trustArgs],
      undefined,
      { env: { KEYSTONE_AGE_IDENTITY: repo.operator.keyFile } },
    );
    expect(env.code, env.stderr).toBe(0);
    expect(repo.read('secrets/keys/edge.age').equals(key)).toBe(false);
    const noKey = await repo.ctl([
      'secret',
      'rekey',
      '--target',
      'edge',
      '--identity',
      repo.operator.keyFile,
      ...repo.trustArgs,
    ]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('--enrollment-key PUB is required');
    const noTrust = await repo.ctl([
      'secret',
      'rekey',
      '--target',
      'edge',
      '--enrollment-key',
      repo.enrollPub,
      '--identity',
      repo.operator.keyFile,
    ]);
    expect(noTrust.code).toBe(2);
    expect(noTrust.stderr).toContain('no trusted key: give --trusted-key FILE');
  });

  it('an operator whose recipient was signed in after the key was made is told to have it rewrapped', async () => {
    await setSigned('db', ['edge'], 'v');
    const second = await repo.identity('second-operator');
    repo.write('secrets/operators.txt', `${repo.text('secrets/operators.txt')}${second.recipient}\n`);
    await repo.sign();
    const r = await repo.ctl([
      'secret',
      'rekey',
      '--target',
      'edge',
      '--enrollment-key',
      repo.enrollPub,
      '--identity',
      second.keyFile,
      ...repo.trustArgs,
    ]);
    refused(r);
    expect(r.stderr).toContain(
      'Your recipient is in secrets/operators.txt now, so the key was made before it was added: an operator who opens it runs keystonectl secret rewrap --target edge',
    );
    // The first operator rewraps: the second is shown added, and then opens the key.
    const rewrap = await repo.rekey('edge', [], 'rewrap');
    expect(rewrap.code, rewrap.stderr).toBe(0);
    expect(rewrap.stdout).toContain(
      `  operators: ${repo.operator.recipient}, ${second.recipient} (added: ${second.recipient}; removed: none)`,
    );
    await repo.sign();
    const now = await repo.ctl([
      'secret',
      'rekey',
      '--target',
      'edge',
      '--enrollment-key',
      repo.enrollPub,
      '--identity',
      second.keyFile,
      ...repo.trustArgs,
    ]);
    expect(now.code, now.stderr).toBe(0);
  });

  it("attack: an attacker's recipient appended to the operators file, its SHA256SUMS line rewritten, gets no key", async () => {
    await setSigned('db', ['edge'], 'v');
    const key = repo.read('secrets/keys/edge.age');
    const attacker = await newAgeIdentity();
    repo.write('secrets/operators.txt', `${repo.text('secrets/operators.txt')}${attacker.recipient}\n`);
    const sums = repo.text('SHA256SUMS');
    repo.write(
      'SHA256SUMS',
      sums.replace(/^[0-9a-f]{64}(?= {2}secrets\/operators\.txt$)/m, sha256Hex(repo.read('secrets/operators.txt'))),
    );
    expect(repo.text('SHA256SUMS')).not.toBe(sums);
    const r = await rekey('edge');
    refused(r, 'KS_SIGNATURE_INVALID');
    expect(repo.read('secrets/keys/edge.age').equals(key)).toBe(true);
    // SHA256SUMS left as signed: the operators file is not the signed one.
    repo.write('SHA256SUMS', sums);
    const changed = await rekey('edge');
    refused(changed);
    expect(changed.stderr).toContain(
      'secrets/operators.txt is not the file SHA256SUMS lists: it was changed since the last signature, and every target key is wrapped to the recipients it lists',
    );
    expect(repo.read('secrets/keys/edge.age').equals(key)).toBe(true);
    expect(await decryptWith([attacker.identity], repo.read('secrets/keys/edge.age'))).toBeUndefined();
  });

  it('refuses an old key file that is not the signed one (planted, or removed), and a fleet.toml changed since', async () => {
    await setSigned('db', ['edge'], 'v');
    const key = repo.read('secrets/keys/edge.age');
    // A key the attacker knows, wrapped to the operator so that it opens: re-wrapped, it would stay theirs.
    const planted = await newAgeIdentity();
    repo.write(
      'secrets/keys/edge.age',
      await encryptTo([repo.operator.recipient], new TextEncoder().encode(formatAgeIdentityFile(planted, Date.now()))),
    );
    for (const mode of ['rekey', 'rewrap'] as const) {
      const r = await repo.rekey('edge', [], mode);
      refused(r);
      expect(r.stderr).toContain(
        `secrets/keys/edge.age is not the file SHA256SUMS lists: it was changed since the last signature, and it is target edge's key, which a ${mode}`,
      );
      expect(r.stderr).toContain('Review it first (git diff secrets/keys/edge.age');
      expect(r.stdout).toBe('');
    }
    rmSync(repo.path('secrets/keys/edge.age'));
    const gone = await rekey('edge');
    refused(gone);
    expect(gone.stderr).toContain('secrets/keys/edge.age is listed in SHA256SUMS but is not there');
    repo.write('secrets/keys/edge.age', key);
    repo.write(
      'fleet.toml',
      repo.text('fleet.toml').replace('selector = { site = "berlin" }', 'selector = { site = "hamburg" }'),
    );
    const fleet = await rekey('edge');
    refused(fleet);
    expect(fleet.stderr).toContain('fleet.toml is not the file SHA256SUMS lists');
    expect(repo.read('secrets/keys/edge.age').equals(key)).toBe(true);
  });

  it('refuses, writing nothing, when a secret is also for a recipient the operator cannot tell apart', async () => {
    await setSigned('db', ['edge'], 'v');
    const stranger = await newAgeIdentity();
    // As `age -R secrets/recipients/edge.txt -r age1stranger…` would make it.
    repo.write(
      'secrets/shared.age',
      await encryptTo([recipientOf('edge'), stranger.recipient], new TextEncoder().encode('shared value')),
    );
    const before = {
      key: repo.read('secrets/keys/edge.age'),
      db: repo.read('secrets/db.age'),
      rec: repo.text('secrets/recipients/edge.txt'),
    };
    const r = await rekey('edge');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('rekey of target edge refused, nothing was written');
    expect(r.stderr).toContain(
      'secret shared (secrets/shared.age) is encrypted to 2 recipients, and one is a target you can open (edge)',
    );
    expect(r.stderr).toContain('[KS_SECRET_OPERATOR]');
    expect(r.stdout + r.stderr).not.toContain('shared value');
    expect(repo.read('secrets/keys/edge.age').equals(before.key)).toBe(true);
    expect(repo.read('secrets/db.age').equals(before.db)).toBe(true);
    expect(repo.text('secrets/recipients/edge.txt')).toBe(before.rec);
  });
});

describe('keystonectl secret rewrap', () => {
  const rewrap = (target: string) => repo.rekey(target, [], 'rewrap');

  it('after an enrolment: the same key to the current devices, one file rewritten, no secret re-encrypted', async () => {
    await setSigned('db', ['edge'], 'value of db');
    const before = {
      recipient: recipientOf('edge'),
      db: repo.read('secrets/db.age'),
      identity: await repo.targetIdentity('edge'),
    };
    await repo.enrol('edge-4', { site: 'berlin' });
    const r = await rewrap('edge');
    expect(r.code, r.stderr).toBe(0);
    expect(recipientOf('edge')).toBe(before.recipient);
    expect(await repo.targetIdentity('edge')).toBe(before.identity);
    expect(await repo.openers('secrets/keys/edge.age')).toEqual(['edge-1', 'edge-2', 'edge-4', 'operator']);
    expect(repo.read('secrets/db.age').equals(before.db)).toBe(true);
    expect(r.stdout).toContain(
      `target edge's key (recipient ${before.recipient}, unchanged) goes to:\n  readers: edge-1, edge-2, edge-4 (added: edge-4; removed: none)\n`,
    );
    expect(r.stdout).toContain(`rewrapped target edge's key (recipient ${before.recipient}, unchanged)`);
    expect(r.stdout).not.toContain('re-encrypted');
    expect(r.stdout + r.stderr).not.toContain('value of db');
  });

  it('refused when a device would lose the key it knows (revoked): only a rekey cuts it off; refused without a key', async () => {
    await setSigned('db', ['edge'], 'value of db');
    const key = repo.read('secrets/keys/edge.age');
    repo.write(
      'devices/revoked.toml',
      `${repo.text('devices/revoked.toml')}\n[[revoked]]\ndevice = "edge-2"\nreason = "sold"\n`,
    );
    await repo.sign();
    const r = await rewrap('edge');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('a rewrap of target edge would drop edge-2');
    expect(r.stderr).toContain('[KS_SECRET_OPERATOR]');
    expect(repo.read('secrets/keys/edge.age').equals(key)).toBe(true);
    // Nor can the device's name be taken out of the recipients file to get past that: the file must be the signed one.
    repo.write('secrets/recipients/edge.txt', repo.text('secrets/recipients/edge.txt').replace(' edge-2', ''));
    const edited = await rewrap('edge');
    refused(edited);
    expect(edited.stderr).toContain(
      'secrets/recipients/edge.txt is not the file SHA256SUMS lists: it was changed since the last signature, and a rewrap relies on the devices it names',
    );
    expect(repo.read('secrets/keys/edge.age').equals(key)).toBe(true);
    const none = await rewrap('lab');
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('target lab has no key yet');
  });
});
