// The development source (SPEC §7): a plain directory watched with chokidar; each settled change is a revision named by its files' hash.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { DirectoryReader, listDocuments } from './directory-reader.js';

export type { Revision, RevisionOrigin } from './revision.js';
import type { Revision } from './revision.js';

/** Files whose change makes a new revision: what is signed and the signature itself. */
const WATCHED = ['recipes', 'plans', 'fleet.toml', 'devices', 'secrets', 'SHA256SUMS', 'SHA256SUMS.minisig'];

/** Names the directory's current content: the hash of every watched file's path and digest. */
export async function directoryRevisionId(root: string): Promise<string> {
  const h = createHash('sha256');
  const files = [...(await listDocuments(root)), 'SHA256SUMS', 'SHA256SUMS.minisig'].sort();
  for (const f of files) {
    let digest = 'absent';
    try {
      digest = createHash('sha256')
        .update(await readFile(join(root, f)))
        .digest('hex');
    } catch {
      /* a missing file is part of the state too */
    }
    h.update(`${f}\0${digest}\n`);
  }
  return `dir:${h.digest('hex').slice(0, 12)}`;
}

export interface DirectorySourceOptions {
  /** Quiet time after the last change before the directory counts as settled (an editor writes in bursts). */
  settleMs?: number;
  onRevision: (r: Revision) => void;
  onError?: (e: Error) => void;
}

/** Emits the current revision at start, then one per settled change that alters the content. */
export class DirectorySource {
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;
  private lastId?: string;
  private closed = false;

  constructor(
    readonly root: string,
    private readonly opts: DirectorySourceOptions,
  ) {}

  async start(): Promise<void> {
    this.watcher = watch(
      WATCHED.map((w) => join(this.root, w)),
      { ignoreInitial: true, persistent: true },
    );
    this.watcher.on('all', () => this.changed());
    this.watcher.on('error', (e) => this.opts.onError?.(e as Error));
    await new Promise<void>((resolve) => this.watcher!.once('ready', () => resolve()));
    await this.emitIfNew();
  }

  /** Looks now, without waiting for the watcher to notice and settle (POST /v1/sync); a new content is offered. */
  async syncNow(): Promise<void> {
    await this.emitIfNew();
  }

  /** A change now: wait until nothing has changed for settleMs, then look. */
  private changed(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => void this.emitIfNew().catch((e: Error) => this.opts.onError?.(e)),
      this.opts.settleMs ?? 300,
    );
  }

  private async emitIfNew(): Promise<void> {
    const id = await directoryRevisionId(this.root);
    if (this.closed || id === this.lastId) return;
    this.lastId = id;
    this.opts.onRevision({
      id,
      origin: 'directory',
      source: `directory ${this.root}`,
      reader: new DirectoryReader(this.root),
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.watcher?.close();
  }
}
