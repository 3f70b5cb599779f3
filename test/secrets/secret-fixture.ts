// An operator's checkout for the `keystonectl secret` tests: fleet.toml with two targets, enrolled devices (certificates
// signed in-process with the seeded enrolment key, each device with a fresh age identity), one forged certificate,
// an operator identity listed in secrets/operators.txt, and a signing key for `keystonectl sign`. The checkout is
// signed once made (fleet.toml, devices/revoked.toml, secrets/operators.txt: what `secret set|rekey|rewrap` take only
// signed), and the secret commands are run with `--trusted-key` its public key (`trustArgs`); a test signs again
// (`sign()`) after each change a command must then take, as an operator does.
//
//   edge  selector site=berlin   readers: edge-1, edge-2 (edge-3 revoked, forged-1 signed by another key)
//   lab   devices ["lab-1"]      readers: lab-1
//   (hamburg-1 is enrolled with site=hamburg: no target takes it)
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { formatAgeIdentityFile } from '../../src/identity/age-identity-file.js';
import { reportKeyLine } from '../../src/identity/certificate.js';
import { signCertificate } from '../../src/identity/sign-certificate.js';
import { decryptWith, newAgeIdentity } from '../../src/secrets/age-codec.js';
import { formatPublicKey, formatSecretKey, type SecretKey } from '../../src/trust/minisign.js';
import type { CliIo } from '../../src/cli/io.js';
import { runCtl, type CliResult } from '../support/cli-run.js';
import { ENROLL, keyNamed, OTHER, seeded } from '../identity/identity-fixture.js';

export interface Device {
  name: string;
  identity: string;
  recipient: string;
  /** age.key as the device keeps it (age-keygen's format), for `age -d -i`. */
  keyFile: string;
}

export const FLEET_TOML = `[[targets]]
name = "edge"
selector = { site = "berlin" }
plan = "plans/edge.toml"

[[targets]]
name = "lab"
devices = ["lab-1"]
plan = "plans/lab.toml"

[[targets]]
name = "empty"
devices = ["nobody"]
plan = "plans/lab.toml"
`;

export const SIGN_KEY: SecretKey = keyNamed('secret tests signing key');

export class SecretRepo {
  readonly devices = new Map<string, Device>();
  operator!: Device;

  private constructor(readonly root: string) {}

  get dir(): string {
    return join(this.root, 'repo');
  }

  static async create(): Promise<SecretRepo> {
    const r = new SecretRepo(mkdtempSync(join(tmpdir(), 'keystone-secret-')));
    mkdirSync(join(r.dir, 'plans'), { recursive: true });
    mkdirSync(join(r.dir, 'recipes'), { recursive: true });
    mkdirSync(join(r.root, 'keys'));
    writeFileSync(join(r.dir, 'fleet.toml'), FLEET_TOML);
    writeFileSync(join(r.dir, 'plans/edge.toml'), 'components = ["db"]\n');
    writeFileSync(join(r.dir, 'plans/lab.toml'), 'components = ["db"]\n');
    writeFileSync(join(r.root, 'keys/enroll.pub'), formatPublicKey(ENROLL));
    writeFileSync(join(r.root, 'keys/sign.key'), await formatSecretKey(SIGN_KEY, undefined, seeded('sign key file')));
    writeFileSync(join(r.root, 'keys/sign.pub'), formatPublicKey(SIGN_KEY));
    await r.enrol('edge-1', { site: 'berlin' });
    await r.enrol('edge-2', { site: 'berlin' });
    await r.enrol('edge-3', { site: 'berlin' });
    await r.enrol('lab-1', {});
    await r.enrol('hamburg-1', { site: 'hamburg' });
    await r.enrol('forged-1', { site: 'berlin' }, OTHER);
    writeFileSync(join(r.dir, 'devices/revoked.toml'), '[[revoked]]\ndevice = "edge-3"\nreason = "stolen"\n');
    r.operator = await r.identity('operator');
    r.write('secrets/operators.txt', `# the operators\n${r.operator.recipient}\n`);
    await r.sign();
    return r;
  }

  /** `keystonectl sign` with the release key: SHA256SUMS and its signature over the checkout as it is. */
  async sign(): Promise<void> {
    const r = await this.ctl(['sign', '--key', join(this.root, 'keys/sign.key')]);
    if (r.code !== 0) throw new Error(`keystonectl sign: exit ${r.code}: ${r.stderr}`);
  }

  /** `--trusted-key` the release key's public key: how `secret set|rekey|rewrap` verify the checkout. */
  get trustArgs(): string[] {
    return ['--trusted-key', join(this.root, 'keys/sign.pub')];
  }

  /** A device with a fresh age identity and its certificate devices/NAME.cert, signed by `key` (the enrolment key). */
  async enrol(name: string, labels: Record<string, string>, key: SecretKey = ENROLL): Promise<Device> {
    const d = await this.identity(name);
    mkdirSync(join(this.dir, 'devices'), { recursive: true });
    const cert = signCertificate(
      {
        device: name,
        reportKey: reportKeyLine(keyNamed(`${name} report`)),
        ageRecipient: d.recipient,
        labels,
        issuedAt: Date.now() - 60_000,
      },
      key,
    );
    writeFileSync(join(this.dir, 'devices', `${name}.cert`), cert);
    this.devices.set(name, d);
    return d;
  }

  /** A new age identity, its file under keys/ (as the devices' and the operator's). */
  async identity(name: string): Promise<Device> {
    const { identity, recipient } = await newAgeIdentity();
    const keyFile = join(this.root, 'keys', `${name}.age.key`);
    writeFileSync(keyFile, formatAgeIdentityFile({ identity, recipient }, Date.now()), { mode: 0o600 });
    return { name, identity, recipient, keyFile };
  }

  device(name: string): Device {
    return this.devices.get(name)!;
  }

  path(rel: string): string {
    return join(this.dir, rel);
  }
  read(rel: string): Buffer {
    return readFileSync(this.path(rel));
  }
  text(rel: string): string {
    return readFileSync(this.path(rel), 'utf8');
  }
  write(rel: string, text: string | Uint8Array): void {
    mkdirSync(join(this.path(rel), '..'), { recursive: true });
    writeFileSync(this.path(rel), text);
  }

  /** `keystonectl ARGS` in the checkout; `input`: what is piped on stdin. */
  ctl(args: string[], input?: string | Uint8Array, extra: Partial<CliIo> = {}): Promise<CliResult> {
    const stdin =
      input === undefined ? undefined : (Readable.from([Buffer.from(input)]) as unknown as NodeJS.ReadStream);
    return runCtl(args, this.dir, { ...(stdin && { stdin }), ...extra });
  }

  /** `secret set NAME --target …` with the value on stdin, the enrolment key and `--trusted-key` (unless `more` says --allow-unsigned). */
  set(name: string, targets: string[], value: string, more: string[] = []): Promise<CliResult> {
    const trust = more.includes('--allow-unsigned') ? [] : this.trustArgs;
    return this.ctl(
      [
        'secret',
        'set',
        name,
        ...targets.flatMap((t) => ['--target', t]),
        '--enrollment-key',
        this.enrollPub,
        ...trust,
        ...more,
      ],
      value,
    );
  }

  /** `secret rekey|rewrap --target T` with the enrolment key, the operator's identity and `--trusted-key`. */
  rekey(target: string, more: string[] = [], mode: 'rekey' | 'rewrap' = 'rekey'): Promise<CliResult> {
    return this.ctl([
      'secret',
      mode,
      '--target',
      target,
      '--enrollment-key',
      this.enrollPub,
      '--identity',
      this.operator.keyFile,
      ...this.trustArgs,
      ...more,
    ]);
  }

  get enrollPub(): string {
    return join(this.root, 'keys/enroll.pub');
  }

  /** The names of the devices (and "operator") whose identity opens `rel`. */
  async openers(rel: string): Promise<string[]> {
    const out: string[] = [];
    for (const d of [...this.devices.values(), this.operator])
      if (await decryptWith([d.identity], this.read(rel))) out.push(d.name);
    return out.sort();
  }

  /** Target T's identity, opened with the operator's. */
  async targetIdentity(target: string): Promise<string> {
    const plain = await decryptWith([this.operator.identity], this.read(`secrets/keys/${target}.age`));
    if (!plain) throw new Error(`the operator cannot open secrets/keys/${target}.age`);
    return new TextDecoder()
      .decode(plain)
      .split('\n')
      .find((l) => l.startsWith('AGE-SECRET-KEY-1'))!;
  }

  /** The value of secrets/NAME.age opened with target T's key, as text; undefined when T cannot open it. */
  async valueFor(name: string, target: string): Promise<string | undefined> {
    const plain = await decryptWith([await this.targetIdentity(target)], this.read(`secrets/${name}.age`));
    return plain && new TextDecoder().decode(plain);
  }

  cleanup(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}
