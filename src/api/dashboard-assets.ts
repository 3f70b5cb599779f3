// The dashboard's files as web/build.mjs leaves them in dist/web: index.html, hashed assets with .br and .gz siblings,
// and manifest.json (which assets the login page needs, and each one's type). Read on the first request, not at the
// agent's start (a device nobody opens the page of never holds them in memory), and again when the build rewrote them.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import * as v from 'valibot';
import { object, parse, record } from '../core/valid.js';
import { bundleDir } from '../package-manifest.js';

export interface DashboardFile {
  type: string;
  body: Buffer;
  br?: Buffer;
  gzip?: Buffer;
  etag: string;
}

export interface DashboardAssets {
  /** `/` and the asset paths served without a session. */
  isPublic(path: string): boolean;
  /** A file by its URL path (`/` is index.html); undefined for anything the build did not write. */
  file(path: string): DashboardFile | undefined;
}

const manifestSchema = object({
  public: v.array(v.string()),
  files: record(v.pipe(v.string(), v.regex(/^\/assets\/[A-Za-z0-9._-]+$/)), object({ type: v.string() })),
});

/**
 * Where the built page is: web/ beside the bundle the package installs, dist/web beside dist/api when running the
 * build, or the repository's dist/web when the TypeScript sources run directly (the tests).
 */
export function defaultDashboardDir(): string {
  if (bundleDir) return join(bundleDir, 'web');
  const here = import.meta.dirname;
  const candidates = [join(here, '..', 'web'), join(here, '..', '..', 'dist', 'web')];
  // Not built yet: where the build will put it (the files are looked for at each request).
  return candidates.find((d) => existsSync(join(d, 'manifest.json'))) ?? candidates[0]!;
}

export function loadDashboardAssets(dir: string): DashboardAssets {
  const manifestPath = join(dir, 'manifest.json');
  let loaded:
    | {
        mtimeMs: number;
        open: Set<string>;
        files: v.InferOutput<typeof manifestSchema>['files'];
        cache: Map<string, DashboardFile | undefined>;
      }
    | undefined;
  /**
   * The manifest as it is now: read again when the build rewrote it (npm run build beside a running agent, a package
   * upgrade before the restart), so that a new page is never served with the old list of its files.
   */
  const current = () => {
    let mtimeMs: number;
    try {
      mtimeMs = statSync(manifestPath).mtimeMs;
    } catch {
      return undefined;
    }
    if (loaded?.mtimeMs !== mtimeMs) {
      try {
        const m = parse(manifestSchema, JSON.parse(readFileSync(manifestPath, 'utf8')));
        loaded = { mtimeMs, open: new Set(m.public), files: m.files, cache: new Map() };
      } catch {
        // Half written (the build is writing it now): nothing is served until it is whole.
        return undefined;
      }
    }
    return loaded;
  };
  const read = (file: string) => (existsSync(file) ? readFileSync(file) : undefined);
  const load = (files: v.InferOutput<typeof manifestSchema>['files'], path: string): DashboardFile | undefined => {
    const entry =
      path === '/'
        ? { type: 'text/html; charset=utf-8', file: join(dir, 'index.html') }
        : files[path] && { type: files[path].type, file: join(dir, path.slice(1)) };
    if (!entry) return undefined;
    const body = read(entry.file);
    if (!body) return undefined;
    const br = read(`${entry.file}.br`);
    const gzip = read(`${entry.file}.gz`);
    return {
      type: entry.type,
      body,
      ...(br && { br }),
      ...(gzip && { gzip }),
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
    };
  };
  return {
    isPublic: (path) => path === '/' || path === '/index.html' || (current()?.open.has(path) ?? false),
    file(path) {
      const m = current();
      if (!m) return undefined;
      const key = path === '/index.html' ? '/' : path;
      if (!m.cache.has(key)) m.cache.set(key, load(m.files, key));
      return m.cache.get(key);
    },
  };
}
