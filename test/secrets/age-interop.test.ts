// Interoperability with the real `age` (Debian's age 1.x), both ways (SPEC §16): a secret made by
// `age -R secrets/recipients/T.txt` is read by a device of T; `age -d -i <device age.key>` opens the target key file
// Keystone wrote; `age -d -i <target key>` opens a secret `keystonectl secret set` wrote; an operator identity made by
// `age-keygen -o` rekeys. Armored and binary both.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseAgeIdentityFile } from '../../src/identity/age-identity-file.js';
import { ageFormat } from '../../src/secrets/age-codec.js';
import { SecretOpener } from '../../src/secrets/open-secrets.js';
import { parseRecipientsFile } from '../../src/secrets/recipients-file.js';
import { digestKeyOf } from '../../src/secrets/secret-digest.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { needs } from '../support/requirements.js';
import { SecretRepo } from './secret-fixture.js';

const tools = needs('age');
const age = (args: string[], cwd: string) => execFileSync('age', args, { cwd });

let repo: SecretRepo;
beforeEach(async () => {
  repo = await SecretRepo.create();
  // edge's key and recipients file, made by keystonectl.
  const r = await repo.ctl([
    'secret',
    'rekey',
    '--target',
    'edge',
    '--enrollment-key',
    repo.enrollPub,
    ...repo.trustArgs,
  ]);
  expect(r.code, r.stderr).toBe(0);
  await repo.sign();
});
afterEach(() => repo?.cleanup());

const device = (name: string) =>
  new SecretOpener({ ageIdentity: repo.device(name).identity, digestKey: digestKeyOf(repo.device(name).identity) });

describe.skipIf(tools.skip)(tools.title('age interoperability'), () => {
  it('a secret made by age -R secrets/recipients/edge.txt (armored, binary) is read by a device of edge', async () => {
    const value = 'made by age\n\u00e9\u0000';
    execFileSync('age', ['-a', '-R', 'secrets/recipients/edge.txt', '-o', 'secrets/armored.age'], {
      cwd: repo.dir,
      input: value,
    });
    execFileSync('age', ['-R', 'secrets/recipients/edge.txt', '-o', 'secrets/binary.age'], {
      cwd: repo.dir,
      input: value,
    });
    expect(ageFormat(repo.read('secrets/armored.age'))).toBe('armored');
    expect(ageFormat(repo.read('secrets/binary.age'))).toBe('binary');
    const opened = await device('edge-1').open(new DirectoryReader(repo.dir), ['armored', 'binary'], 'edge');
    expect([...opened.values.values()].map((v) => Buffer.from(v).toString('utf8'))).toEqual([value]);
    expect(opened.digests.get('armored')).toBe(opened.digests.get('binary'));
    await expect(device('lab-1').open(new DirectoryReader(repo.dir), ['armored'], 'edge')).rejects.toMatchObject({
      code: 'KS_SECRET_NOT_RECIPIENT',
    });
  });

  it('age -d -i <device age.key> prints the target identity of secrets/keys/edge.age; a revoked device cannot', () => {
    const text = age(['-d', '-i', repo.device('edge-2').keyFile, 'secrets/keys/edge.age'], repo.dir).toString('utf8');
    const parsed = parseAgeIdentityFile(text);
    expect('problem' in parsed).toBe(false);
    expect((parsed as { recipient: string }).recipient).toBe(
      parseRecipientsFile(repo.text('secrets/recipients/edge.txt'), 'edge.txt').recipient,
    );
    expect(text).toMatch(/^# created: \S+Z\n# public key: age1\w+\nAGE-SECRET-KEY-1[0-9A-Z]+\n$/);
    expect(() =>
      execFileSync('age', ['-d', '-i', repo.device('edge-3').keyFile, 'secrets/keys/edge.age'], {
        cwd: repo.dir,
        stdio: 'pipe',
      }),
    ).toThrow(/no identity matched/);
  });

  it('a secret written by secret set (armored, --binary) is opened by age -d -i <target key>', async () => {
    const targetKey = join(repo.root, 'edge-target.key');
    execFileSync('age', ['-d', '-i', repo.operator.keyFile, '-o', targetKey, 'secrets/keys/edge.age'], {
      cwd: repo.dir,
    });
    for (const [name, more] of [
      ['armored', []],
      ['binary', ['--binary']],
    ] as const) {
      const value = `value ${name}\n`;
      expect((await repo.set(name, ['edge'], value, [...more])).code).toBe(0);
      expect(age(['-d', '-i', targetKey, `secrets/${name}.age`], repo.dir).toString('utf8')).toBe(value);
    }
  });

  it('an operator identity made by age-keygen -o rekeys and lists', async () => {
    const opKey = join(repo.root, 'keys/age-keygen-operator.key');
    execFileSync('age-keygen', ['-o', opKey], { stdio: 'pipe' });
    const recipient = execFileSync('age-keygen', ['-y', opKey]).toString('utf8').trim();
    repo.write('secrets/operators.txt', `${repo.operator.recipient}\n${recipient}\n`);
    await repo.sign();
    // The listed operator rekeys: the new key is wrapped to the age-keygen operator too, who then rekeys alone.
    expect((await repo.set('db', ['edge'], 'db value')).code).toBe(0);
    const first = await repo.ctl([
      'secret',
      'rekey',
      '--target',
      'edge',
      '--enrollment-key',
      repo.enrollPub,
      '--identity',
      repo.operator.keyFile,
      ...repo.trustArgs,
    ]);
    expect(first.code, first.stderr).toBe(0);
    await repo.sign();
    const second = await repo.ctl([
      'secret',
      'rekey',
      '--target',
      'edge',
      '--enrollment-key',
      repo.enrollPub,
      '--identity',
      opKey,
      ...repo.trustArgs,
    ]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('re-encrypted 1 secret: db');
    const ls = await repo.ctl(['secret', 'ls', '--identity', opKey]);
    expect(ls.stdout).toContain('  read by: edge (edge-1, edge-2)');
    expect(ls.stdout).not.toContain('db value');
    expect(await repo.valueFor('db', 'edge')).toBe('db value');
  });
});
