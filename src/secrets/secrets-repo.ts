// The operator's checkout as `keystonectl secret` sees it: the secrets/ files, fleet.toml, the signed digests. Reads
// go through DirectoryReader (never out of the repository by a link, bounded); writes replace a file whole (a temporary
// file renamed over it), and never through a linked directory: secrets/ is written where it really is, or not at all.
import { randomUUID } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { InvalidRevisionError } from '../core/errors.js';
import { FLEET_FILE, parseFleet, type Fleet } from '../core/fleet.js';
import { DirectoryReader } from '../source/directory-reader.js';
import { MAX_DOCUMENT_BYTES } from '../source/repo-reader.js';
import { parseSha256Sums, sha256Hex } from '../trust/sha256sums.js';
import { SUMS_FILE } from '../trust/verify-revision.js';
import { parseRecipients } from './age-codec.js';
import { SecretError } from './secret-error.js';
import { isSecretName, MAX_SECRET_FILE_BYTES, OPERATORS_FILE, SECRETS_DIR } from './secret-paths.js';

export type SignedState = 'signed' | 'changed' | 'unlisted' | 'unsigned';

export class SecretsRepo {
  private readonly reader: DirectoryReader;
  private sums?: ReadonlyMap<string, string> | null;

  constructor(readonly root: string) {
    this.reader = new DirectoryReader(root);
  }

  /** The file's bytes, or undefined when it is not there; anything else (a link out, a directory, too large) throws. */
  async read(path: string, max = MAX_SECRET_FILE_BYTES): Promise<Uint8Array | undefined> {
    const r = await this.reader.readFile(path, max);
    if (r.ok) return r.bytes;
    if (r.code === 'KS_FILE_NOT_FOUND') return undefined;
    throw new SecretError(r.code === 'KS_FILE_TOO_LARGE' ? 'KS_SECRET_CORRUPT' : 'KS_SECRET_OPERATOR', r.message, path);
  }

  async readText(path: string): Promise<string | undefined> {
    const bytes = await this.read(path);
    return bytes && new TextDecoder().decode(bytes);
  }

  /** Replaces `path` whole: readers (git, an agent in directory mode) see the old file or the new one. */
  write(path: string, bytes: Uint8Array): void {
    const full = join(this.root, path);
    this.ensureRealDirectory(dirname(path));
    const temp = join(dirname(full), `.${randomUUID()}.tmp`);
    try {
      // 0644: a ciphertext or a recipient is no secret, and Git keeps no other mode.
      writeFileSync(temp, bytes, { flag: 'wx', mode: 0o644 });
      renameSync(temp, full);
    } finally {
      rmSync(temp, { force: true });
    }
  }

  remove(path: string): void {
    this.ensureRealDirectory(dirname(path));
    rmSync(join(this.root, path));
  }

  /** Names of the secrets: every secrets/NAME.age that is a file (or a link, refused when read). */
  secretNames(): string[] {
    return this.list(SECRETS_DIR, '.age').filter(isSecretName);
  }

  /** Targets with a key file (secrets/keys/T.age) or a recipients file (secrets/recipients/T.txt). */
  targetsWithFiles(): { keys: string[]; recipients: string[] } {
    return { keys: this.list(`${SECRETS_DIR}/keys`, '.age'), recipients: this.list(`${SECRETS_DIR}/recipients`, '.txt') };
  }

  /** fleet.toml, parsed; secrets are encrypted to its targets, so without a valid one there is nothing to do. */
  async fleet(): Promise<Fleet> {
    const text = await this.readText(FLEET_FILE);
    if (text === undefined) throw new SecretError('KS_SECRET_OPERATOR', `${this.root} has no ${FLEET_FILE}: secrets are encrypted to its targets (SPEC §13, §16)`, FLEET_FILE);
    const parsed = parseFleet(FLEET_FILE, text);
    if (!parsed.fleet) throw new InvalidRevisionError(parsed.diagnostics);
    return parsed.fleet;
  }

  /** The digests SHA256SUMS lists (empty when the repository was never signed). */
  async signedDigests(): Promise<ReadonlyMap<string, string>> {
    if (this.sums === undefined) {
      const bytes = await this.read(SUMS_FILE, 16 * MAX_DOCUMENT_BYTES);
      this.sums = bytes ? parseSha256Sums(new TextDecoder().decode(bytes), SUMS_FILE) : null;
    }
    return this.sums ?? new Map();
  }

  /**
   * 'changed' when SHA256SUMS lists `path` with another digest than its bytes; 'unlisted' when it lists other files
   * but not this one (added since the last signature); 'unsigned' when the repository was never signed.
   */
  async signedState(path: string, bytes: Uint8Array): Promise<SignedState> {
    const sums = await this.signedDigests();
    const listed = sums.get(path);
    if (listed === undefined) return sums.size ? 'unlisted' : 'unsigned';
    return listed === sha256Hex(bytes) ? 'signed' : 'changed';
  }

  /** The operators' recipients (secrets/operators.txt; none when absent) and whether the file is the signed one. */
  async operators(): Promise<{ recipients: string[]; state: SignedState | 'absent' }> {
    const bytes = await this.read(OPERATORS_FILE);
    if (!bytes) return { recipients: [], state: 'absent' };
    let recipients: string[];
    try {
      recipients = parseRecipients(new TextDecoder().decode(bytes), OPERATORS_FILE);
    } catch (e) {
      throw new SecretError('KS_SECRET_OPERATOR', (e as Error).message, OPERATORS_FILE);
    }
    return { recipients: [...new Set(recipients)], state: await this.signedState(OPERATORS_FILE, bytes) };
  }

  /** Base names (without `ext`) of the entries of `dir` that are files or links, sorted. */
  private list(dir: string, ext: string): string[] {
    let entries;
    try {
      entries = readdirSync(join(this.root, dir), { withFileTypes: true });
    } catch {
      return [];
    }
    return entries
      .filter((e) => (e.isFile() || e.isSymbolicLink()) && e.name.endsWith(ext) && e.name.length > ext.length)
      .map((e) => e.name.slice(0, -ext.length))
      .sort();
  }

  /** Makes `dir` (under the root) if needed; refuses when it, or a directory above it, is a link or not a directory. */
  private ensureRealDirectory(dir: string): void {
    let at = this.root;
    for (const part of dir.split('/')) {
      at = join(at, part);
      const st = lstatSync(at, { throwIfNoEntry: false });
      if (!st) mkdirSync(at);
      else if (!st.isDirectory())
        throw new SecretError('KS_SECRET_OPERATOR', `${at} is ${st.isSymbolicLink() ? 'a link' : 'not a directory'}: secrets are written only into the repository's own ${SECRETS_DIR}/ directory`, dir);
    }
  }
}
