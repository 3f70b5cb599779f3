// docs/composites.md's dry runs as written: its shell block is read from the doc, the commands that make and edit the
// copy (`/tmp/edit`, here a scratch directory) are run one by one with bash in a Git copy of the example repository,
// as a new user would from a checkout, and each command's output is compared with the `# ` lines the doc shows under
// it. Needs the build (bin/keystonectl.js), as the doc does.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleRepo, PROJECT_ROOT, type ExampleRepo } from '../support/example-repo.js';

const run = promisify(execFile);
const DOC = join(PROJECT_ROOT, 'docs', 'composites.md');

/** One command of a shell block and the lines the doc shows as its output (the `# ` lines right under it). */
interface Step {
  command: string;
  expected: string[];
}

/** The ```sh blocks of a markdown file, each as its lines. */
function shellBlocks(markdown: string): string[][] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!.replace(/\n$/, '').split('\n'));
}

/**
 * The steps of a block: a command line, then the comment lines right under it (no blank line between) are its
 * output; a comment after a blank line is prose. A comment at the end of a command line is not part of it.
 */
function stepsOf(lines: string[]): Step[] {
  const steps: Step[] = [];
  let last: Step | undefined;
  for (const line of lines) {
    if (line.trim() === '') last = undefined;
    else if (line.startsWith('#')) {
      if (last) last.expected.push(line.replace(/^# ?/, ''));
    } else {
      last = { command: line.replace(/\s+#\s.*$/, ''), expected: [] };
      steps.push(last);
    }
  }
  return steps;
}

let repo: ExampleRepo;
let scratch: string;
beforeAll(async () => {
  repo = await exampleRepo({ signed: false });
  scratch = mkdtempSync(join(tmpdir(), 'keystone-doc-'));
});
afterAll(() => {
  repo.cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

describe('docs/composites.md runs as written', () => {
  it('the dry runs of an edited copy print what the doc shows', { timeout: 120_000 }, async () => {
    const block = shellBlocks(readFileSync(DOC, 'utf8')).find((b) =>
      b.some((l) => l.includes('keystonectl apply-dry')),
    );
    expect(block, 'a ```sh block with keystonectl apply-dry in docs/composites.md').toBeDefined();
    // The commands of the edit: every one that names the copy, from its clone to the last dry run.
    const steps = stepsOf(block!).filter((s) => s.command.includes('/tmp/edit'));
    const dryRuns = steps.filter((s) => s.command.includes('keystonectl apply-dry'));
    expect(dryRuns.length).toBeGreaterThanOrEqual(2);
    for (const d of dryRuns) expect(d.expected.length, d.command).toBeGreaterThan(0);

    const edit = join(scratch, 'edit');
    const prelude = `set -o pipefail\nkeystonectl() { "${process.execPath}" "${join(PROJECT_ROOT, 'bin', 'keystonectl.js')}" "$@"; }\n`;
    for (const step of steps) {
      const command = step.command.split('/tmp/edit').join(edit);
      let out: { stdout: string; stderr: string };
      try {
        out = await run('bash', ['-c', prelude + command], { cwd: repo.dir, timeout: 60_000 });
      } catch (e) {
        const err = e as { code?: number; stdout?: string; stderr?: string };
        throw new Error(`${step.command} exited ${err.code}:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
      }
      if (step.expected.length) expect(out.stdout.replace(/\n$/, '').split('\n'), step.command).toEqual(step.expected);
    }
  });
});
