// Issue 34 (the second hour): `--help` and `-h` after every subcommand of both programs print that command's usage
// on stdout and exit 0, where Node's parser used to refuse them ("Unknown option '--help'", exit 2). The commands are
// read from the programs' own tables and their subcommands from their usage lines, so a command added later is
// covered without touching this file. After a `--` separator `--help` is an argument like any other.
import { execFile } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { asksForHelp } from '../../src/cli/help-flag.js';
import type { CliIo } from '../../src/cli/io.js';
import { COMMANDS as KEYSTONE_COMMANDS, main as keystone, usageOf } from '../../src/cli/keystone.js';
import { COMMANDS as KEYSTONECTL_COMMANDS, main as keystonectl } from '../../src/cli/keystonectl.js';
import { PROJECT_ROOT } from '../support/example-repo.js';

type Main = (argv: string[], io: CliIo) => Promise<number>;

async function runIn(main: Main, argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  // An empty environment and a directory with nothing in it: help reads no configuration, state or repository.
  const code = await main(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    cwd: '/nonexistent',
    env: {},
  });
  return { code, stdout, stderr };
}

/**
 * The ways a command is invoked, from its usage text: `keystonectl secret set NAME …` and `keystonectl secret ls …`
 * give [secret, set] and [secret, ls]; `keystonectl status [--json]` gives [status].
 */
function invocations(program: string, name: string, usage: string): string[][] {
  const subs = new Set<string>();
  for (const m of usage.matchAll(new RegExp(`(?:^|\\s)${program} ${name} ([a-z][a-z-]*)(?=\\s|$)`, 'g')))
    subs.add(m[1]!);
  return subs.size ? [...subs].map((s) => [name, s]) : [[name]];
}

const ctlCases = await Promise.all(
  Object.entries(KEYSTONECTL_COMMANDS).map(async ([name, c]) => {
    const { usage } = await c.load();
    return invocations('keystonectl', name, usage).map((words) => ({ words, usage }));
  }),
).then((l) => l.flat());
const agentCases = await Promise.all(
  KEYSTONE_COMMANDS.map(async (name) => ({ words: [name], usage: await usageOf(name) })),
);

describe('asksForHelp', () => {
  it('is --help or -h as an argument of its own, before any -- separator', () => {
    expect(asksForHelp(['--help'])).toBe(true);
    expect(asksForHelp(['web', '--json', '-h'])).toBe(true);
    expect(asksForHelp(['--', '--help'])).toBe(false);
    expect(asksForHelp(['web', '--', '-h'])).toBe(false);
    expect(asksForHelp(['--helpful', '-hx', 'help'])).toBe(false);
    expect(asksForHelp([])).toBe(false);
  });
});

describe('keystonectl <command> --help', () => {
  it('covers subcommands: fleet status and every secret subcommand are among the cases', () => {
    const shown = ctlCases.map((c) => c.words.join(' '));
    expect(shown).toEqual(
      expect.arrayContaining(['fleet status', 'secret set', 'secret ls', 'status', 'start', 'stop']),
    );
    expect(shown.length).toBeGreaterThanOrEqual(Object.keys(KEYSTONECTL_COMMANDS).length);
  });

  it.each(
    ctlCases.flatMap((c) =>
      ['--help', '-h'].map((flag) => ({ ...c, argv: [...c.words, flag], shown: `${c.words.join(' ')} ${flag}` })),
    ),
  )('keystonectl $shown: its usage on stdout, exit 0, nothing on stderr', async ({ argv, usage }) => {
    const r = await runIn(keystonectl, argv);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(usage);
  });

  it('after other arguments too; after -- it is an argument like any other (here a component name, refused)', async () => {
    const late = await runIn(keystonectl, ['restart', 'web', '--wait', 'started', '--help']);
    expect(late).toMatchObject({ code: 0, stderr: '' });
    expect(late.stdout).toMatch(/^usage: keystonectl restart NAME /);
    const separated = await runIn(keystonectl, ['start', '--', '--help']);
    expect(separated.code).toBe(2);
    expect(separated.stdout).toBe('');
    expect(separated.stderr).toContain('"--help" is not a valid component name');
  });
});

describe('keystone <command> --help', () => {
  const signals = new EventEmitter();
  const run: Main = (argv, io) => keystone(argv, io, signals);

  it.each(
    agentCases.flatMap((c) =>
      ['--help', '-h'].map((flag) => ({ ...c, argv: [...c.words, flag], shown: `${c.words.join(' ')} ${flag}` })),
    ),
  )(
    'keystone $shown: its usage on stdout, exit 0, nothing on stderr (and nothing started)',
    async ({ argv, usage }) => {
      const r = await runIn(run, argv);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`usage: ${usage}\n`);
    },
  );
});

describe('the installed programs (bin/, from dist/)', () => {
  const exec = promisify(execFile);
  it.each([
    ['keystonectl.js', 'status'],
    ['keystonectl.js', 'fleet', 'status'],
    ['keystone.js', 'agent'],
    ['keystone.js', 'doctor'],
  ])('%s %s … --help exits 0 with the usage on stdout', async (bin, ...words) => {
    const { stdout, stderr } = await exec(process.execPath, [join(PROJECT_ROOT, 'bin', bin), ...words, '--help'], {
      cwd: PROJECT_ROOT,
      timeout: 30_000,
    });
    expect(stderr).toBe('');
    expect(stdout).toContain(`${bin.replace('.js', '')} ${words.join(' ')} [`);
  });
});
