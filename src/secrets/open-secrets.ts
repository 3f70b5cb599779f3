// A device opens the secrets its plan reads (SPEC §16): its own age identity opens its target's key file
// (secrets/keys/T.age), whose identity opens each secrets/NAME.age. Any failure names the secret and why, never a
// value, and refuses the revision like an invalid one (nothing stopped or started).
import { createHash } from 'node:crypto';
import { parseAgeIdentityFile } from '../identity/age-identity-file.js';
import type { RepoReader } from '../source/repo-reader.js';
import { decryptWith } from './age-codec.js';
import { secretDigest } from './secret-digest.js';
import { SecretError } from './secret-error.js';
import { MAX_SECRET_FILE_BYTES, secretPath, targetKeyPath } from '../core/secret-paths.js';

export interface OpenedSecrets {
  /** name → keyed digest. */
  digests: Map<string, string>;
  /** digest → value. */
  values: Map<string, Uint8Array>;
}

/** Opened files by their content's digest: a revision that does not change a secret does not decrypt it again. */
const MAX_CACHED = 256;

export class SecretOpener {
  private readonly cache = new Map<string, Uint8Array | string>();
  constructor(private readonly device: { ageIdentity: string; digestKey: Uint8Array }) {}

  async open(reader: RepoReader, names: readonly string[], target: string | undefined): Promise<OpenedSecrets> {
    const out: OpenedSecrets = { digests: new Map(), values: new Map() };
    if (names.length === 0) return out;
    if (target === undefined)
      throw new SecretError(
        'KS_SECRET_NO_TARGET',
        `the plan reads ${names.map((n) => `secret ${n}`).join(', ')}, and this device is in no fleet.toml target: secrets are encrypted to targets (SPEC §16)`,
        undefined,
        names[0],
      );
    const keyFile = targetKeyPath(target);
    // Every message names the secrets first: a report's description is cut at its end.
    const which = `secret ${names.join(', ')}`;
    const keyBytes = await this.read(
      reader,
      keyFile,
      `${which}: target ${target} has no key file ${keyFile} (keystonectl secret rekey --target ${target} makes one)`,
      names[0],
    );
    const targetIdentity = await this.cached(`key\0${digestOf(keyBytes)}`, async () => {
      const plain = await this.decrypt([this.device.ageIdentity], keyBytes, keyFile, names.join(', '));
      if (!plain)
        throw new SecretError(
          'KS_SECRET_NOT_RECIPIENT',
          `${which}: this device is not a recipient of ${keyFile} (enrolled after the target's last rekey or rewrap, revoked, or in another target: keystonectl secret rewrap --target ${target})`,
          keyFile,
          names[0],
        );
      const parsed = parseAgeIdentityFile(new TextDecoder().decode(plain));
      if ('problem' in parsed)
        throw new SecretError(
          'KS_SECRET_CORRUPT',
          `${which}: ${keyFile} does not hold a target key: ${parsed.problem}`,
          keyFile,
          names[0],
        );
      return parsed.identity;
    });
    for (const name of names) {
      const file = secretPath(name);
      const bytes = await this.read(
        reader,
        file,
        `secret ${name}: ${file} is not in this revision (keystonectl secret set ${name} --target ${target})`,
        name,
      );
      const value = await this.cached(
        `secret\0${digestOf(bytes)}\0${digestOf(new TextEncoder().encode(targetIdentity as string))}`,
        async () => {
          const plain = await this.decrypt([targetIdentity as string], bytes, file, name);
          if (!plain)
            throw new SecretError(
              'KS_SECRET_NOT_RECIPIENT',
              `secret ${name}: ${file} is not encrypted to target ${target} (wrong target: keystonectl secret set ${name} --target ${target})`,
              file,
              name,
            );
          return plain;
        },
      );
      const digest = secretDigest(this.device.digestKey, value as Uint8Array);
      out.digests.set(name, digest);
      out.values.set(digest, value as Uint8Array);
    }
    return out;
  }

  private async read(
    reader: RepoReader,
    file: string,
    missing: string,
    secret: string | undefined,
  ): Promise<Uint8Array> {
    const r = await reader.readFile(file, MAX_SECRET_FILE_BYTES);
    if (r.ok) return r.bytes;
    if (r.code === 'KS_FILE_NOT_FOUND') throw new SecretError('KS_SECRET_MISSING', missing, file, secret);
    throw new SecretError(
      'KS_SECRET_CORRUPT',
      `${secret !== undefined ? `secret ${secret}: ` : ''}${r.message}`,
      file,
      secret,
    );
  }

  private async decrypt(
    identities: string[],
    bytes: Uint8Array,
    file: string,
    secret: string | undefined,
  ): Promise<Uint8Array | undefined> {
    try {
      return await decryptWith(identities, bytes);
    } catch (e) {
      throw new SecretError(
        'KS_SECRET_CORRUPT',
        `${secret !== undefined ? `secret ${secret}: ` : ''}${file}: ${(e as Error).message}`,
        file,
        secret,
      );
    }
  }

  private async cached<T extends Uint8Array | string>(key: string, make: () => Promise<T>): Promise<T> {
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit as T;
    const v = await make();
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(key, v);
    return v;
  }
}

function digestOf(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
