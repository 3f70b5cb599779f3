// The operator's checkout as `keystonectl secret` sees it: the secrets/ files, fleet.toml, and (once the command verified
// its signature) the signed digests every file it relies on must match. Reads go through DirectoryReader (never out of
// the repository by a link, bounded); writes replace a file whole (a temporary file renamed over it), and never through
// a linked directory: secrets/ is written where it really is, or not at all.
import { randomUUID } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { InvalidRevisionError } from '../core/errors.js';
import { FLEET_FILE, parseFleet, type Fleet } from '../core/fleet.js';
import { DirectoryReader } from '../source/directory-reader.js';
import { sha256Hex } from '../trust/sha256sums.js';
import { SUMS_FILE } from '../trust/verify-revision.js';
import { parseRecipients } from './age-codec.js';
import { SecretError } from './secret-error.js';
import { isSecretName, MAX_SECRET_FILE_BYTES, OPERATORS_FILE, SECRETS_DIR } from '../core/secret-paths.js';

/** What an operator does about a file that is not the signed one: nothing is taken from it until it is signed. */
export function reviewAndSign(path: string): string {
  return `Review it first (git diff ${path}; a file you did not change is someone else's), sign (keystonectl sign --key KEY), then run this again: nothing was written`;
}

export class SecretsRepo {
  private readonly reader: DirectoryReader;
  private sums?: ReadonlyMap<string, string>;
  private fleetBytes?: Uint8Array;

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
    return {
      keys: this.list(`${SECRETS_DIR}/keys`, '.age'),
      recipients: this.list(`${SECRETS_DIR}/recipients`, '.txt'),
    };
  }

  /**
   * fleet.toml, parsed; secrets are encrypted to its targets, so without a valid one there is nothing to do. Its bytes
   * are kept: which devices a target takes is decided by it, so a command that computes readers checks it is signed.
   */
  async fleet(): Promise<Fleet> {
    const bytes = await this.read(FLEET_FILE);
    if (bytes === undefined)
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `${this.root} has no ${FLEET_FILE}: secrets are encrypted to its targets (SPEC §13, §16)`,
        FLEET_FILE,
      );
    this.fleetBytes = bytes;
    const parsed = parseFleet(FLEET_FILE, new TextDecoder().decode(bytes));
    if (!parsed.fleet) throw new InvalidRevisionError(parsed.diagnostics);
    return parsed.fleet;
  }

  /** Refused unless the fleet.toml `fleet()` read is the signed one (readers are computed from it). */
  checkFleetSigned(): void {
    this.checkSigned(
      FLEET_FILE,
      this.fleetBytes,
      'it decides which devices each target takes (and so who reads its key)',
    );
  }

  /**
   * From now on, the files the command relies on must be exactly the signed ones: `sums` is SHA256SUMS, its signature
   * verified (secret-trust.ts). Without it (`--allow-unsigned`, or a command that only reads) files are taken as they are.
   */
  requireSigned(sums: ReadonlyMap<string, string>): void {
    this.sums = sums;
  }

  /** Whether the verified SHA256SUMS lists `path` (false when nothing is checked). */
  isListed(path: string): boolean {
    return this.sums?.has(path) ?? false;
  }

  /**
   * Why `path` (its bytes, or undefined when absent) is not exactly the signed file, or undefined when it is (or when
   * nothing is checked). Listed: it must be there and match; not listed: it must not be there.
   */
  signedProblem(path: string, bytes: Uint8Array | undefined): string | undefined {
    if (!this.sums) return undefined;
    const listed = this.sums.get(path);
    if (listed === undefined)
      return bytes ? `${path} is not in ${SUMS_FILE}: it was added since the last signature` : undefined;
    if (!bytes) return `${path} is listed in ${SUMS_FILE} but is not there: it was removed since the last signature`;
    return sha256Hex(bytes) === listed
      ? undefined
      : `${path} is not the file ${SUMS_FILE} lists: it was changed since the last signature`;
  }

  /**
   * `path`, refused (KS_SECRET_OPERATOR) unless it is exactly the signed file: `role` says what the command takes from
   * it, and the message what to do (review, sign, run again).
   */
  async readSigned(path: string, role: string): Promise<Uint8Array | undefined> {
    const bytes = await this.read(path);
    this.checkSigned(path, bytes, role);
    return bytes;
  }

  checkSigned(path: string, bytes: Uint8Array | undefined, role: string): void {
    const problem = this.signedProblem(path, bytes);
    if (problem) throw new SecretError('KS_SECRET_OPERATOR', `${problem}, and ${role}. ${reviewAndSign(path)}`, path);
  }

  /** The operators' recipients (secrets/operators.txt; none when absent), refused unless it is the signed file. */
  async operators(): Promise<string[]> {
    const bytes = await this.readSigned(OPERATORS_FILE, 'every target key is wrapped to the recipients it lists');
    if (!bytes) return [];
    let recipients: string[];
    try {
      recipients = parseRecipients(new TextDecoder().decode(bytes), OPERATORS_FILE);
    } catch (e) {
      throw new SecretError('KS_SECRET_OPERATOR', (e as Error).message, OPERATORS_FILE);
    }
    return [...new Set(recipients)];
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
        throw new SecretError(
          'KS_SECRET_OPERATOR',
          `${at} is ${st.isSymbolicLink() ? 'a link' : 'not a directory'}: secrets are written only into the repository's own ${SECRETS_DIR}/ directory`,
          dir,
        );
    }
  }
}
