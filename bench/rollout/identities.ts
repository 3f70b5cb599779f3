// Device identities for the rollout bench's signed synthetic reads: an enrolment key, a key pair and a certificate per
// device, and the devices/ the admission reads them from (a directory, or a commit in a bare Git repository).
import { Buffer } from 'node:buffer';
import { spawnSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, randomBytes, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import nacl from 'tweetnacl';
import { reportKeyLine } from '../../dist/identity/certificate.js';
import { signCertificate } from '../../dist/identity/sign-certificate.js';
import { DirectoryReader } from '../../dist/source/directory-reader.js';
import { GitTreeReader } from '../../dist/source/git-tree-reader.js';
import { generateKey } from '../../dist/trust/minisign.js';
import { BENCH_GIT_ENV } from '../lib/git-http-backend.js';

/**
 * Device identities for the synthetic reads (SPEC §15), made in this process: an enrolment key, a key pair per device,
 * its certificate by `signCertificate` (dist/identity/sign-certificate.js), and the devices/ directory a gate's admission
 * reads them from, as a plain directory (DirectoryReader) or as a commit in a bare Git repository whose objects are in
 * one pack, as an agent's cache holds a fetched commit (GitTreeReader, the reader report-admission gets on a device).
 *
 * Signing speed only: signCertificate signs with tweetnacl's pure JavaScript Ed25519 (~4 ms a signature, two per
 * certificate: ~15 minutes for 100,000 certificates on this machine). Ed25519 signatures are deterministic, so
 * tweetnacl's `sign.detached` is swapped, in this process only, for Node's crypto over the same key, after checking
 * that both give the same bytes; verification (what is measured) is the product's own, untouched.
 */
export async function syntheticIdentities() {
  const PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');
  const enrollment = generateKey((n: number) => new Uint8Array(randomBytes(n)));
  const original = nacl.sign.detached;
  const keyObjects = new Map<string, KeyObject>();
  const fast = (message: Uint8Array, secretKey: Uint8Array) => {
    const seed = Buffer.from(secretKey.subarray(0, 32));
    const id = seed.toString('hex');
    let k = keyObjects.get(id);
    if (!k)
      keyObjects.set(id, (k = createPrivateKey({ key: Buffer.concat([PKCS8, seed]), format: 'der', type: 'pkcs8' })));
    return new Uint8Array(cryptoSign(null, Buffer.from(message), k));
  };
  const probe = randomBytes(97);
  if (!Buffer.from(original(probe, enrollment.secretKey)).equals(Buffer.from(fast(probe, enrollment.secretKey))))
    throw new Error("Node's Ed25519 and tweetnacl's disagree: not swapping");
  nacl.sign.detached = fast as typeof nacl.sign.detached;
  const AGE = 'age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p';
  const issuedAt = Date.now() - 60_000;
  return {
    enrollmentPublic: { keyId: enrollment.keyId, publicKey: enrollment.publicKey },
    /** A device's report key, as ensureDeviceKeys makes one (minisign's layout: seed ‖ public key, a random key id). */
    // (Not generateKeyPairSync + a JWK export: on Node 20, tens of thousands of those deadlocked this process, a
    // collected KeyGenJob's destructor waiting on a mutex the export held.)
    deviceKey() {
      const seed = randomBytes(32);
      const pub = createPublicKey(createPrivateKey({ key: Buffer.concat([PKCS8, seed]), format: 'der', type: 'pkcs8' }))
        .export({ format: 'der', type: 'spki' })
        .subarray(-32);
      return {
        keyId: new Uint8Array(randomBytes(8)),
        secretKey: new Uint8Array(Buffer.concat([seed, pub])),
        publicKey: new Uint8Array(pub),
      };
    },
    certificate: (device: string, key: ReturnType<typeof generateKey>) =>
      signCertificate({ device, reportKey: reportKeyLine(key), ageRecipient: AGE, labels: {}, issuedAt }, enrollment),
    /** devices/<name>.cert for every device, in a plain directory. */
    directoryOf(dir: string, devs: { d: string }[], certs: string[]) {
      mkdirSync(join(dir, 'devices'), { recursive: true });
      for (let i = 0; i < devs.length; i++) writeFileSync(join(dir, 'devices', `${devs[i]!.d}.cert`), certs[i]!);
      return {
        reader: new DirectoryReader(dir),
        info: { files: devs.length },
        remove: () => rmSync(dir, { recursive: true, force: true }),
      };
    },
    /** One commit whose tree is devices/<name>.cert for every device, written by `git fast-import` (one pack). */
    async gitCacheOf(gitdir: string, devs: { d: string }[], certs: string[]) {
      const init = spawnSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', gitdir], {
        env: BENCH_GIT_ENV,
      });
      if (init.status !== 0) throw new Error(`git init: ${init.stderr}`);
      const parts = [
        Buffer.from(
          'commit refs/heads/main\ncommitter Bench <bench@keystone.invalid> 1796378400 +0000\ndata 8\nenrolled\n',
        ),
      ];
      for (let i = 0; i < devs.length; i++) {
        const b = Buffer.from(certs[i]!);
        parts.push(Buffer.from(`M 100644 inline devices/${devs[i]!.d}.cert\ndata ${b.length}\n`), b, Buffer.from('\n'));
      }
      const r = spawnSync('git', ['-C', gitdir, 'fast-import', '--quiet'], {
        input: Buffer.concat(parts),
        env: BENCH_GIT_ENV,
        maxBuffer: 64 * 1024 * 1024,
      });
      if (r.status !== 0) throw new Error(`git fast-import: ${r.stderr}`);
      const commit = spawnSync('git', ['-C', gitdir, 'rev-parse', 'refs/heads/main'], {
        env: BENCH_GIT_ENV,
        encoding: 'utf8',
      }).stdout.trim();
      const packs = spawnSync('sh', ['-c', `du -b ${gitdir}/objects/pack/*.pack | awk '{s+=$1} END {print s}'`], {
        encoding: 'utf8',
      }).stdout.trim();
      const tree = spawnSync('git', ['-C', gitdir, 'cat-file', '-s', 'refs/heads/main:devices'], {
        env: BENCH_GIT_ENV,
        encoding: 'utf8',
      }).stdout.trim();
      return {
        reader: new GitTreeReader({ gitdir }, commit, 'main'),
        info: { packBytes: Number(packs), devicesTreeBytes: Number(tree) },
        remove: () => rmSync(gitdir, { recursive: true, force: true }),
      };
    },
  };
}
