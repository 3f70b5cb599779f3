// Secret files (SPEC §16, [[lifecycle.run.secrets]]): written when an instance starts, removed when it stops or exits.
//
// Each start gets its own directory, `<root>/<component>.<random>`: during a start-first roll the old and the new
// instance run side by side, and the old one's stop must not take the new one's files. Next to it the agent keeps a
// record, `<name>.ref` (its instance, once known, and the links it made), so that a stop, an exit or an agent started
// later finds what to remove; nothing in a record is a value. The root is the agent's (0711: run users pass through
// to their own directory and list nothing); it is on tmpfs where the device has one (secrets-root.ts).
import { randomBytes } from 'node:crypto';
import { chmod, chown, lstat, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, posix, resolve } from 'node:path';
import type { DesiredComponent } from '../core/desired-state.js';
import type { SecretValues } from '../secrets/secret-vault.js';
import { RuntimeError } from './runtime-error.js';
import type { InstanceRef } from './runtime.js';
import { ensureSecretsRoot } from './secrets-root.js';
import { assertLinkFree, placeLink, removeLink, removeSecretDir, writeSecretFile, type Owner } from './secret-file-ops.js';
import { secretValue } from './secret-env.js';

/** Where the files of one start are, for the runtime: the host file of each [[lifecycle.run.secrets]] entry, in order. */
export interface PlacedSecrets {
  files: Array<{ name: string; path: string; host: string }>;
  /** Records the instance the files belong to: its stop (or exit) removes them. */
  bind(ref: InstanceRef): Promise<void>;
  /** Removes everything placed: the start did not happen. */
  discard(): Promise<void>;
}

/**
 * How the files are given: a process reads them as the run user (`owner`, when the agent is root and it runs as
 * another user) through a link in its work directory; a container through read-only bind mounts, whatever its user.
 */
export type Placement = { kind: 'process'; workDir: string; owner?: Owner } | { kind: 'container' };

interface Record_ {
  kind: 'process' | 'container';
  component: string;
  ref?: InstanceRef;
  links: Array<{ link: string; target: string }>;
}

const REF_SUFFIX = '.ref';
/** `<component>.<16 hex>`: the component part is its name with `/` (members, replicas) as `+`, which names never hold. */
const DIR_NAME = /^(.+)\.([0-9a-f]{16})$/;
const componentKey = (name: string) => name.replaceAll('/', '+');
const refKey = (ref: InstanceRef) => (ref.kind === 'process' ? `process:${ref.pid}:${ref.startTime}` : `container:${ref.id}`);

export class SecretFiles {
  /** Directories being placed by this runtime, whose record has no instance yet: a sweep leaves them alone. */
  private readonly placing = new Set<string>();
  /** Releases in flight, by instance: an exit and a stop of the same instance remove once. */
  private readonly releasing = new Map<string, Promise<void>>();

  private readonly opts: { root: string; kind: 'process' | 'container'; values: () => SecretValues | undefined };

  constructor(opts: { root: string; kind: 'process' | 'container'; values: () => SecretValues | undefined }) {
    // Absolute: a process's link names its file by this path, and a container's mount source must be one.
    this.opts = { ...opts, root: resolve(opts.root) };
  }

  /**
   * Writes the files of `c`'s [[lifecycle.run.secrets]] (undefined when it has none): every value is looked up first
   * (KS_SECRET_UNAVAILABLE before anything is written), a process's links are checked before any is made
   * (KS_SECRET_PATH_TAKEN), and a failure part way removes what was made. Other failures: KS_SECRET_FILE_FAILED.
   */
  async place(c: DesiredComponent, where: Placement): Promise<PlacedSecrets | undefined> {
    const entries = c.recipe.lifecycle.run.secrets ?? [];
    if (entries.length === 0) return undefined;
    const values = entries.map((e) => secretValue(c, e.name, this.opts.values()));
    const files = entries.map((e, i) => ({ name: e.name, path: e.path, file: where.kind === 'process' ? e.path : `${i}-${posix.basename(e.path)}` }));
    if (where.kind === 'process') for (const f of files) await assertLinkFree(c, join(where.workDir, f.path), f.name);
    const { root } = this.opts;
    try {
      ensureSecretsRoot(root);
    } catch (e) {
      throw this.failure(c, `its secrets directory ${root} cannot be used: ${(e as Error).message}`, e);
    }
    const name = `${componentKey(c.name)}.${randomBytes(8).toString('hex')}`;
    const dir = join(root, name);
    const record: Record_ = { kind: where.kind, component: c.name, links: [] };
    this.placing.add(name);
    try {
      // The record first: an agent that dies from here on leaves something a later sweep finds.
      await this.writeRecord(name, record);
      await mkdir(dir, { mode: 0o700 });
      const owner = where.kind === 'process' ? where.owner : undefined;
      const placed = [];
      for (const [i, f] of files.entries()) {
        const host = await writeSecretFile(dir, f.file, values[i]!, { mode: where.kind === 'process' ? 0o400 : 0o444, ...(owner && { owner }) });
        placed.push({ name: f.name, path: f.path, host });
      }
      // A process's directory is its run user's, read-only; a container's stays root-only (the mounts reach the files).
      if (where.kind === 'process') {
        await chmod(dir, 0o500);
        if (owner) await chown(dir, owner.uid, owner.gid);
        for (const p of placed) {
          const link = join(where.workDir, p.path);
          record.links.push({ link, target: p.host });
          await this.writeRecord(name, record);
          await placeLink(c, link, p.host, p.name);
        }
      }
      return {
        files: placed,
        bind: async (ref) => {
          record.ref = ref;
          this.bound.set(refKey(ref), { name, record });
          // Best effort on disk: this agent removes them by its own memory of the instance either way, and a record
          // left without its instance stays "being placed", which no sweep of this agent takes for a dead start.
          await this.writeRecord(name, record).then(
            () => this.placing.delete(name),
            () => {},
          );
        },
        discard: async () => {
          this.placing.delete(name);
          await this.remove(name, record);
        },
      };
    } catch (e) {
      this.placing.delete(name);
      await this.remove(name, record).catch(() => {});
      if (e instanceof RuntimeError) throw e;
      throw this.failure(c, `cannot write its secret files under ${root}: ${(e as Error).message}`, e);
    }
  }

  /** Instances bound by this runtime, to their directory and record: found without reading the records. */
  private readonly bound = new Map<string, { name: string; record: Record_ }>();
  /** Removals in flight, by directory: a release and a sweep that meet remove once. */
  private readonly removing = new Map<string, Promise<void>>();

  /** Removes the files (and links) of instance `ref`, once it has stopped or exited; nothing when it had none. */
  release(ref: InstanceRef): Promise<void> {
    const key = refKey(ref);
    let p = this.releasing.get(key);
    if (!p) {
      p = this.releaseNow(key).finally(() => this.releasing.delete(key));
      this.releasing.set(key, p);
    }
    return p;
  }

  /**
   * Removes the files of `component` (all components when undefined) whose instance is gone (`alive` says no), and
   * those of a start that never recorded an instance and is not under way here (an agent that died meanwhile).
   */
  async sweep(alive: (ref: InstanceRef) => boolean | Promise<boolean>, component?: string): Promise<void> {
    for (const { name, record } of await this.records()) {
      // An unreadable record is a start that died part way, as one without an instance.
      if (record && (record.kind !== this.opts.kind || (component !== undefined && record.component !== component))) continue;
      if (record?.ref ? await alive(record.ref) : this.placing.has(name)) continue;
      await this.remove(name, record);
    }
  }

  private async releaseNow(key: string): Promise<void> {
    const known = this.bound.get(key);
    const candidates = known ? [known] : await this.records();
    for (const { name, record } of candidates) {
      if (!record || record.kind !== this.opts.kind || !record.ref || refKey(record.ref) !== key) continue;
      await this.remove(name, record);
    }
    this.bound.delete(key);
  }

  private remove(name: string, record: Record_ | undefined): Promise<void> {
    let p = this.removing.get(name);
    if (!p) {
      p = this.removeNow(name, record).finally(() => this.removing.delete(name));
      this.removing.set(name, p);
    }
    return p;
  }

  /** Links first (while they still point into the directory), then the directory, then the record. */
  private async removeNow(name: string, record: Record_ | undefined): Promise<void> {
    for (const l of record?.links ?? []) await removeLink(l.link, l.target);
    await removeSecretDir(join(this.opts.root, name));
    await rm(join(this.opts.root, name + REF_SUFFIX), { force: true });
  }

  /** Every record under the root (none when it does not exist yet). */
  private async records(): Promise<Array<{ name: string; record: Record_ | undefined }>> {
    let entries: string[];
    try {
      entries = await readdir(this.opts.root);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    const out = [];
    for (const entry of entries) {
      if (!entry.endsWith(REF_SUFFIX)) continue;
      const name = entry.slice(0, -REF_SUFFIX.length);
      if (DIR_NAME.test(name)) out.push({ name, record: await this.readRecord(name) });
    }
    return out;
  }

  private async readRecord(name: string): Promise<Record_ | undefined> {
    const path = join(this.opts.root, name + REF_SUFFIX);
    try {
      const st = await lstat(path);
      if (!st.isFile()) return undefined;
      return JSON.parse(await readFile(path, 'utf8')) as Record_;
    } catch {
      return undefined;
    }
  }

  /** The record, replaced in one step (a fresh file renamed over it): a reader never sees half of one. */
  private async writeRecord(name: string, record: Record_): Promise<void> {
    const path = join(this.opts.root, name + REF_SUFFIX);
    const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(tmp, JSON.stringify(record), { mode: 0o600, flag: 'wx' });
    await rename(tmp, path);
  }

  private failure(c: DesiredComponent, why: string, cause: unknown): RuntimeError {
    return new RuntimeError('KS_SECRET_FILE_FAILED', `${c.name}: ${why}`, { component: c.name, path: this.opts.root }, { cause });
  }
}

