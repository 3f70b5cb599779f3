// Secret files (SPEC §16, [[lifecycle.run.secrets]]): written when an instance starts, removed when it stops or exits.
//
// Each start gets its own directory, `<root>/<component>.<random>`: during a start-first roll the old and the new
// instance run side by side, and the old one's stop must not take the new one's files. Next to it the agent keeps a
// record, `<name>.ref` (its instance, once known, and the links it made), so that a stop, an exit or an agent started
// later finds what to remove; nothing in a record is a value. The root is the agent's, on tmpfs where the device has
// one (secrets-root.ts). A process's directory is the agent's too, 0711: its run user reaches its own file (0400, its
// own) by the link in its work directory, and can neither list the directory nor change it (nor fill the tmpfs
// through it). A container's is 0700: the engine's bind mounts reach its files (0444).
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { join, posix, resolve } from 'node:path';
import type { DesiredComponent } from '../core/desired-state.js';
import type { SecretValues } from '../secrets/secret-vault.js';
import { RuntimeError } from './runtime-error.js';
import type { InstanceRef } from './runtime.js';
import { fixedSecretsDir, type SecretsDir } from './secrets-root.js';
import {
  assertLinkFree,
  placeLink,
  removeLink,
  removeSecretDir,
  writeSecretFile,
  type Owner,
} from './secret-file-ops.js';
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
const refKey = (ref: InstanceRef) =>
  ref.kind === 'process' ? `process:${ref.pid}:${ref.startTime}` : `container:${ref.id}`;

/** One start's directory and record: under which root, by which name, what the record says (undefined: unreadable). */
interface Entry {
  root: string;
  name: string;
  record: Record_ | undefined;
}

export class SecretFiles {
  /** Directories (by path) being placed by this runtime, whose record has no instance yet: a sweep leaves them alone. */
  private readonly placing = new Set<string>();
  /** Releases in flight, by instance: an exit and a stop of the same instance remove once. */
  private readonly releasing = new Map<string, Promise<void>>();

  private readonly opts: { root: SecretsDir; kind: 'process' | 'container'; values: () => SecretValues | undefined };

  /** `root`: a SecretsDir (secrets-root.ts), or a directory given as such (fixedSecretsDir). */
  constructor(opts: {
    root: string | SecretsDir;
    kind: 'process' | 'container';
    values: () => SecretValues | undefined;
  }) {
    this.opts = { ...opts, root: typeof opts.root === 'string' ? fixedSecretsDir(opts.root) : opts.root };
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
    const files = entries.map((e, i) => ({
      name: e.name,
      path: e.path,
      file: where.kind === 'process' ? e.path : `${i}-${posix.basename(e.path)}`,
    }));
    if (where.kind === 'process') for (const f of files) await assertLinkFree(c, join(where.workDir, f.path), f.name);
    let root: string;
    try {
      // Absolute: a process's link names its file by this path, and a container's mount source must be one.
      root = resolve(this.opts.root.dir());
    } catch (e) {
      throw this.failure(
        c,
        knownRoot(this.opts.root),
        `its secrets directory cannot be used: ${(e as Error).message}`,
        e,
      );
    }
    const name = `${componentKey(c.name)}.${randomBytes(8).toString('hex')}`;
    const dir = join(root, name);
    const record: Record_ = { kind: where.kind, component: c.name, links: [] };
    const entry: Entry = { root, name, record };
    this.placing.add(dir);
    try {
      // The record first: an agent that dies from here on leaves something a later sweep finds.
      await this.writeRecord(entry);
      await mkdir(dir, { mode: 0o700 });
      const owner = where.kind === 'process' ? where.owner : undefined;
      const placed = [];
      for (const [i, f] of files.entries()) {
        const host = await writeSecretFile(dir, f.file, values[i]!, {
          mode: where.kind === 'process' ? 0o400 : 0o444,
          ...(owner && { owner }),
        });
        placed.push({ name: f.name, path: f.path, host });
      }
      // The agent's, its files written: a process's run user passes through (0711) to its own file, and can neither
      // list nor change the directory; a container's stays root-only (0700: the mounts reach the files).
      if (where.kind === 'process') {
        await chmod(dir, 0o711);
        for (const p of placed) {
          const link = join(where.workDir, p.path);
          record.links.push({ link, target: p.host });
          await this.writeRecord(entry);
          await placeLink(c, link, p.host, p.name);
        }
      }
      return {
        files: placed,
        bind: async (ref) => {
          record.ref = ref;
          this.bound.set(refKey(ref), entry);
          // Best effort on disk: this agent removes them by its own memory of the instance either way, and a record
          // left without its instance stays "being placed", which no sweep of this agent takes for a dead start.
          await this.writeRecord(entry).then(
            () => this.placing.delete(dir),
            () => {},
          );
        },
        discard: async () => {
          this.placing.delete(dir);
          await this.remove(entry);
        },
      };
    } catch (e) {
      this.placing.delete(dir);
      await this.remove(entry).catch(() => {});
      if (e instanceof RuntimeError) throw e;
      throw this.failure(c, root, `cannot write its secret files under ${root}: ${(e as Error).message}`, e);
    }
  }

  /** Instances bound by this runtime, to their directory and record: found without reading the records. */
  private readonly bound = new Map<string, Entry>();
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
    for (const entry of await this.records()) {
      const { record } = entry;
      // An unreadable record is a start that died part way, as one without an instance.
      if (record && (record.kind !== this.opts.kind || (component !== undefined && record.component !== component)))
        continue;
      if (record?.ref ? await alive(record.ref) : this.placing.has(join(entry.root, entry.name))) continue;
      await this.remove(entry);
    }
    // An earlier agent's directory with nothing left in it goes (the other runtime's files keep it until they go).
    for (const root of this.opts.root.former()) await rmdir(root).catch(() => {});
  }

  private async releaseNow(key: string): Promise<void> {
    const known = this.bound.get(key);
    const candidates = known ? [known] : await this.records();
    for (const entry of candidates) {
      const { record } = entry;
      if (!record || record.kind !== this.opts.kind || !record.ref || refKey(record.ref) !== key) continue;
      await this.remove(entry);
    }
    this.bound.delete(key);
  }

  private remove(entry: Entry): Promise<void> {
    const dir = join(entry.root, entry.name);
    let p = this.removing.get(dir);
    if (!p) {
      p = this.removeNow(entry).finally(() => this.removing.delete(dir));
      this.removing.set(dir, p);
    }
    return p;
  }

  /** Links first (while they still point into the directory), then the directory, then the record. */
  private async removeNow({ root, name, record }: Entry): Promise<void> {
    try {
      for (const l of record?.links ?? []) await removeLink(l.link, l.target);
      await removeSecretDir(join(root, name));
      await rm(join(root, name + REF_SUFFIX), { force: true });
    } finally {
      // The last files of an earlier agent's directory: the directory goes with them — also when another remover (an
      // earlier agent's runtime still in this process, a sweep) took some of them first and this one stumbled.
      if (this.opts.root.former().includes(root)) await rmdir(root).catch(() => {});
    }
  }

  /** Every record under the root and under earlier agents' directories (none where a directory does not exist). */
  private async records(): Promise<Entry[]> {
    const current = this.opts.root.known();
    const roots = [...new Set([...(current === undefined ? [] : [resolve(current)]), ...this.opts.root.former()])];
    const out: Entry[] = [];
    for (const root of roots) {
      let names: string[];
      try {
        names = await readdir(root);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw e;
      }
      for (const file of names) {
        if (!file.endsWith(REF_SUFFIX)) continue;
        const name = file.slice(0, -REF_SUFFIX.length);
        if (DIR_NAME.test(name)) out.push({ root, name, record: await this.readRecord(root, name) });
      }
    }
    return out;
  }

  private async readRecord(root: string, name: string): Promise<Record_ | undefined> {
    const path = join(root, name + REF_SUFFIX);
    try {
      const st = await lstat(path);
      if (!st.isFile()) return undefined;
      return JSON.parse(await readFile(path, 'utf8')) as Record_;
    } catch {
      return undefined;
    }
  }

  /** The record, replaced in one step (a fresh file renamed over it): a reader never sees half of one. */
  private async writeRecord({ root, name, record }: Entry): Promise<void> {
    const path = join(root, name + REF_SUFFIX);
    const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(tmp, JSON.stringify(record), { mode: 0o600, flag: 'wx' });
    await rename(tmp, path);
  }

  private failure(c: DesiredComponent, root: string | undefined, why: string, cause: unknown): RuntimeError {
    return new RuntimeError(
      'KS_SECRET_FILE_FAILED',
      `${c.name}: ${why}`,
      { component: c.name, ...(root !== undefined && { path: root }) },
      { cause },
    );
  }
}

/** The directory for an error's details when it could not be made: the one known, if any. */
function knownRoot(root: SecretsDir): string | undefined {
  try {
    return root.known();
  } catch {
    return undefined;
  }
}
