// What the apply-dry bench runs: keystonectl's main() in-process, the parse floor, the pipeline (load, diff, --json) through
// a reader without the document cap, and keystonectl as a cold child process.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parse as parseToml } from 'smol-toml';
import { main } from '../../dist/cli/keystonectl.js';
import { diff, EMPTY_ACTUAL } from '../../dist/core/diff.js';
import { DirectoryReader } from '../../dist/source/directory-reader.js';
import { loadRevision } from '../../dist/load/load-revision.js';
import { projectDir } from '../lib/paths.js';

const bin = join(projectDir, 'bin', 'keystonectl.js');

/** Runs keystonectl in-process, stdout and stderr into strings. */
export async function keystonectl(
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: { write: (s: string) => void (stdout += s) },
    stderr: { write: (s: string) => void (stderr += s) },
    cwd,
    env: {},
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

export async function mustRun(args: string[], cwd: string) {
  const r = await keystonectl(args, cwd);
  if (r.code !== 0)
    throw new Error(
      `keystonectl ${args.join(' ')} exited ${r.code} in ${cwd}:\n${r.stderr.slice(0, 2000)}${r.stdout.slice(0, 2000)}`,
    );
  return r;
}

export function parseFloor(repo: string, files: string[]): number {
  let keys = 0;
  for (const f of files) keys += Object.keys(parseToml(readFileSync(join(repo, f), 'utf8'))).length;
  return keys;
}

/** A directory reader without the document cap, for plans of more than ~14,000 components (bench only). */
function uncappedReader(repo: string) {
  const dir = new DirectoryReader(repo);
  return { label: dir.label, readFile: (path: string) => dir.readFile(path, Number.MAX_SAFE_INTEGER) };
}

/** apply-dry's work in-process, without argument parsing and signatures: load, diff against the empty state, the --json text. */
export async function pipeline(repo: string): Promise<number> {
  const r = await loadRevision(uncappedReader(repo), 'plans/plan.toml');
  if (!r.ok) throw new Error(`loadRevision failed on ${repo}: ${JSON.stringify(r.diagnostics.slice(0, 3))}`);
  const { reasonCodes: _codes, ...plain } = diff(r.state, EMPTY_ACTUAL);
  return JSON.stringify({ plan: 'plans/plan.toml', repo, comparedWith: { kind: 'empty' }, ...plain }, null, 2).length;
}

export async function load(repo: string) {
  const r = await loadRevision(uncappedReader(repo), 'plans/plan.toml');
  if (!r.ok) throw new Error(`loadRevision failed on ${repo}: ${JSON.stringify(r.diagnostics.slice(0, 3))}`);
  return r.state;
}

export function coldRun(repo: string, trust: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [bin, 'apply-dry', 'plans/plan.toml', '--json', '--empty', ...trust], {
    cwd: repo,
    maxBuffer: 1 << 30,
    encoding: 'utf8',
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`cold apply-dry exited ${r.status}: ${r.stderr.slice(0, 2000)}`);
  return ms;
}
