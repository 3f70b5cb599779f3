// The load phase against real directories: what reading a plan and its recipes reports, and where.
import { describe, it, expect, afterEach } from 'vitest';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { join } from 'node:path';
import { CODES, type Diagnostic } from '../../src/core/errors.js';
import type { Resolution } from '../../src/core/desired-state.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { loadRevision } from '../../src/load/load-revision.js';
import { MAX_DOCUMENT_BYTES } from '../../src/source/repo-reader.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { tempRepo, type TempRepo } from '../support/repo-fixture.js';

const PLAN = 'plans/edge.toml';

const recipe = (name: string, deps: string[] = []) =>
  [
    '[metadata]', // 1
    `name = "com.acme.${name}"`, // 2
    'version = "1.0.0"', // 3
    '[lifecycle.run.exec]', // 4
    'command = "./run"', // 5
    '[lifecycle.run.health]', // 6
    'check = "cmd:true"', // 7
    'interval = "1s"', // 8
    ...deps.flatMap((d) => ['[[dependencies]]', `name = "com.acme.${d}"`]), // dependency k: header 9 + 2k, name 10 + 2k
  ].join('\n') + '\n';

// Line n is the array index + 1: entry i's header is on 4i + 1, its name on 4i + 2, its recipe on 4i + 3.
const planText = (entries: Array<[name: string, recipe: string]>) =>
  entries.map(([name, path]) => `[[components]]\nname = "${name}"\nrecipe = "${path}"\n`).join('\n');

const VALID_FILES = {
  [PLAN]: planText([
    ['db', 'recipes/db.toml'],
    ['api', 'recipes/api.toml'],
    ['web', 'recipes/web.toml'],
  ]),
  'recipes/db.toml': recipe('db'),
  'recipes/api.toml': recipe('api', ['db']),
  'recipes/web.toml': recipe('web', ['api']),
};

const repos: TempRepo[] = [];
afterEach(() => {
  for (const r of repos.splice(0)) r.cleanup();
});

/** A temporary copy of the valid three-component repository, with `files` written over it. */
function repo(files: Record<string, string | Uint8Array> = {}): TempRepo {
  const r = tempRepo({ ...VALID_FILES, ...files });
  repos.push(r);
  return r;
}

const load = (r: TempRepo, plan = PLAN) => loadRevision(new DirectoryReader(r.dir), plan);

function diagnosticsOf(res: Resolution): Diagnostic[] {
  if (res.ok) throw new Error(`expected the load to fail, got layers ${JSON.stringify(res.state.layers)}`);
  return res.diagnostics;
}

const where = (diags: Diagnostic[]) => diags.map((x) => ({ code: x.code, file: x.file, path: x.path, line: x.line }));

describe('a valid repository', () => {
  it('loads, with layers and start order', async () => {
    const res = await load(repo());
    expect(res.ok ? res.state.layers : res.diagnostics).toEqual([['db'], ['api'], ['web']]);
  });

  it('normalises the plan path', async () => {
    const res = await load(repo(), './plans/../plans/edge.toml');
    expect(res.ok && res.state.planFile).toBe(PLAN);
  });

  it('follows a recipe symlink that stays inside the repository', async () => {
    const r = repo();
    r.write('shared/db-real.toml', recipe('db'));
    r.symlink('../shared/db-real.toml', 'recipes/db.toml.link');
    r.write(
      PLAN,
      planText([
        ['db', 'recipes/db.toml.link'],
        ['api', 'recipes/api.toml'],
        ['web', 'recipes/web.toml'],
      ]),
    );
    const res = await load(r);
    expect(res.ok ? res.state.startOrder : res.diagnostics).toEqual(['db', 'api', 'web']);
  });

  it('reads a recipe of exactly the size limit', async () => {
    const base = recipe('db');
    const padded = base + '#'.repeat(MAX_DOCUMENT_BYTES - Buffer.byteLength(base));
    expect(Buffer.byteLength(padded)).toBe(MAX_DOCUMENT_BYTES);
    const res = await load(repo({ 'recipes/db.toml': padded }));
    expect(res.ok ? res.state.startOrder : res.diagnostics).toEqual(['db', 'api', 'web']);
  });

  it('skips a UTF-8 byte order mark', async () => {
    const res = await load(repo({ 'recipes/db.toml': '\uFEFF' + recipe('db') }));
    expect(res.ok).toBe(true);
  });
});

describe('recipes that cannot be read are located at the plan entry naming them', () => {
  interface Row {
    name: string;
    /** Makes the second entry's recipe (recipes/api.toml, named on plan line 7) unreadable. */
    setup(r: TempRepo): void;
    code: Diagnostic['code'];
    message: RegExp;
  }
  const rows: Row[] = [
    {
      name: 'a missing file',
      setup: (r) =>
        r.write(
          PLAN,
          planText([
            ['db', 'recipes/db.toml'],
            ['api', 'recipes/missing.toml'],
            ['web', 'recipes/web.toml'],
          ]),
        ),
      code: CODES.FILE_NOT_FOUND,
      message: /recipes\/missing\.toml does not exist/,
    },
    {
      name: 'a symlink to a file outside the repository',
      setup: (r) => {
        const outside = tempRepo({ 'api.toml': recipe('api', ['db']) }, 'keystone-outside-');
        repos.push(outside);
        r.symlink(join(outside.dir, 'api.toml'), 'recipes/api.toml.link');
        r.write(
          PLAN,
          planText([
            ['db', 'recipes/db.toml'],
            ['api', 'recipes/api.toml.link'],
            ['web', 'recipes/web.toml'],
          ]),
        );
      },
      code: CODES.PATH_ESCAPE,
      message: /outside the repository/,
    },
    {
      name: 'a relative symlink climbing out of the repository',
      setup: (r) => {
        const outside = tempRepo({ 'api.toml': recipe('api', ['db']) }, 'keystone-outside-');
        repos.push(outside);
        r.symlink(join('..', '..', outside.dir.split('/').pop()!, 'api.toml'), 'recipes/api.toml.link');
        r.write(
          PLAN,
          planText([
            ['db', 'recipes/db.toml'],
            ['api', 'recipes/api.toml.link'],
            ['web', 'recipes/web.toml'],
          ]),
        );
      },
      code: CODES.PATH_ESCAPE,
      message: /outside the repository/,
    },
    {
      name: 'a file under a symlinked directory that leads outside',
      setup: (r) => {
        const outside = tempRepo({ 'api.toml': recipe('api', ['db']) }, 'keystone-outside-');
        repos.push(outside);
        r.symlink(outside.dir, 'linked');
        r.write(
          PLAN,
          planText([
            ['db', 'recipes/db.toml'],
            ['api', 'linked/api.toml'],
            ['web', 'recipes/web.toml'],
          ]),
        );
      },
      code: CODES.PATH_ESCAPE,
      message: /outside the repository/,
    },
    {
      name: 'a dangling symlink',
      setup: (r) => {
        r.symlink('nowhere.toml', 'recipes/api.toml.link');
        r.write(
          PLAN,
          planText([
            ['db', 'recipes/db.toml'],
            ['api', 'recipes/api.toml.link'],
            ['web', 'recipes/web.toml'],
          ]),
        );
      },
      code: CODES.FILE_NOT_FOUND,
      message: /does not exist/,
    },
    {
      name: 'a directory where the recipe should be',
      setup: (r) => {
        r.mkdir('recipes/api.dir.toml');
        r.write(
          PLAN,
          planText([
            ['db', 'recipes/db.toml'],
            ['api', 'recipes/api.dir.toml'],
            ['web', 'recipes/web.toml'],
          ]),
        );
      },
      code: CODES.NOT_A_FILE,
      message: /is not a regular file/,
    },
    {
      name: 'a file over 1 MiB',
      setup: (r) => r.write('recipes/api.toml', recipe('api', ['db']) + '#'.repeat(MAX_DOCUMENT_BYTES)),
      code: CODES.FILE_TOO_LARGE,
      message: new RegExp(`over the limit of ${MAX_DOCUMENT_BYTES}`),
    },
  ];

  it.each(rows.map((r) => [r.name, r] as const))('%s', async (_name, row) => {
    const r = repo();
    row.setup(r);
    const diags = diagnosticsOf(await load(r));
    expect(where(diags)).toEqual([{ code: row.code, file: PLAN, path: 'components[1].recipe', line: 7 }]);
    expect(diags[0]!.message).toMatch(row.message);
  });

  it('the 1 MiB limit is exactly MAX_DOCUMENT_BYTES', () => expect(MAX_DOCUMENT_BYTES).toBe(1024 * 1024));

  it('a recipe named by two entries is reported once, at the first', async () => {
    const r = repo({
      [PLAN]: planText([
        ['db', 'recipes/db.toml'],
        ['a', 'recipes/gone.toml'],
        ['b', 'recipes/gone.toml'],
      ]),
    });
    expect(where(diagnosticsOf(await load(r)))).toEqual([
      { code: CODES.FILE_NOT_FOUND, file: PLAN, path: 'components[1].recipe', line: 7 },
    ]);
  });

  // Regression (was a bug): parsePlan puts an entry with `recipe = ""` in readableEntries (escapesRepository("") is false, as
  // posix.normalize("") is "."), so besides KS_INVALID_VALUE "must not be empty" the loader reads "." and adds a
  // confusing second error at the same place: ". is not a regular file" (KS_NOT_A_FILE).
  it('an empty recipe path is reported once, as empty', async () => {
    const r = repo({
      [PLAN]: planText([
        ['db', 'recipes/db.toml'],
        ['api', ''],
      ]),
    });
    expect(where(diagnosticsOf(await load(r)))).toEqual([
      { code: CODES.INVALID_VALUE, file: PLAN, path: 'components[1].recipe', line: 7 },
    ]);
  });

  it('every unreadable recipe is reported, not just the first', async () => {
    const r = repo({
      [PLAN]: planText([
        ['db', 'recipes/nope-1.toml'],
        ['api', 'recipes/api.toml'],
        ['web', 'recipes/nope-2.toml'],
      ]),
    });
    expect(where(diagnosticsOf(await load(r)))).toEqual([
      { code: CODES.FILE_NOT_FOUND, file: PLAN, path: 'components[0].recipe', line: 3 },
      { code: CODES.FILE_NOT_FOUND, file: PLAN, path: 'components[2].recipe', line: 11 },
    ]);
  });

  // Regression: open(2) of a FIFO for reading blocks until a writer appears, so the reader opens with O_NONBLOCK.
  it('a named pipe where the recipe should be is KS_NOT_A_FILE, without hanging', async () => {
    const r = repo();
    execFileSync('mkfifo', [join(r.dir, 'recipes/api.fifo.toml')]);
    r.write(
      PLAN,
      planText([
        ['db', 'recipes/db.toml'],
        ['api', 'recipes/api.fifo.toml'],
        ['web', 'recipes/web.toml'],
      ]),
    );
    const loading = load(r);
    const outcome = await Promise.race([loading, new Promise<'hung'>((res) => setTimeout(() => res('hung'), 2_000))]);
    // Unblock a reader stuck in open() (if the regression is back) so the load settles; ENXIO means nobody was waiting.
    try {
      closeSync(openSync(join(r.dir, 'recipes/api.fifo.toml'), constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      /* no reader was blocked */
    }
    await loading;
    expect(outcome).not.toBe('hung');
    expect(where(diagnosticsOf(outcome as Resolution))).toEqual([
      { code: CODES.NOT_A_FILE, file: PLAN, path: 'components[1].recipe', line: 7 },
    ]);
  });
});

describe('the plan file itself', () => {
  it.each([
    ['missing', (r: TempRepo) => r.write('plans/other.toml', ''), 'plans/absent.toml', CODES.FILE_NOT_FOUND],
    ['outside the repository', () => undefined, '../edge.toml', CODES.PATH_ESCAPE],
    ['a directory', (r: TempRepo) => r.mkdir('plans/dir.toml'), 'plans/dir.toml', CODES.NOT_A_FILE],
    [
      'over 1 MiB',
      (r: TempRepo) => r.write('plans/big.toml', '#'.repeat(MAX_DOCUMENT_BYTES + 1)),
      'plans/big.toml',
      CODES.FILE_TOO_LARGE,
    ],
  ] as const)('%s: one diagnostic for the whole file', async (_name, setup, plan, code) => {
    const r = repo();
    setup(r);
    expect(where(diagnosticsOf(await load(r, plan)))).toEqual([{ code, file: plan, path: '', line: undefined }]);
  });

  it('a symlink to a plan outside the repository is KS_PATH_ESCAPE', async () => {
    const outside = tempRepo({ 'edge.toml': VALID_FILES[PLAN] }, 'keystone-outside-');
    repos.push(outside);
    const r = repo();
    r.symlink(join(outside.dir, 'edge.toml'), 'plans/linked.toml');
    expect(where(diagnosticsOf(await load(r, 'plans/linked.toml')))).toEqual([
      { code: CODES.PATH_ESCAPE, file: 'plans/linked.toml', path: '', line: undefined },
    ]);
  });
});

describe('bytes that are not UTF-8', () => {
  const latin1 = (text: string) => Buffer.from(text, 'latin1');

  it('in a recipe', async () => {
    const r = repo({
      'recipes/api.toml': latin1(recipe('api', ['db']).replace('[metadata]', '# caf\u00e9\n[metadata]')),
    });
    const diags = diagnosticsOf(await load(r));
    expect(where(diags)).toEqual([{ code: CODES.TOML_SYNTAX, file: 'recipes/api.toml', path: '', line: undefined }]);
    expect(diags[0]!.message).toMatch(/UTF-8/);
  });

  it('in the plan', async () => {
    const r = repo({ [PLAN]: Buffer.concat([Buffer.from(VALID_FILES[PLAN]), Buffer.from([0x23, 0xff, 0xfe, 0x0a])]) });
    const diags = diagnosticsOf(await load(r));
    expect(where(diags)).toEqual([{ code: CODES.TOML_SYNTAX, file: PLAN, path: '', line: undefined }]);
    expect(diags[0]!.message).toMatch(/UTF-8/);
  });

  it('a truncated multi-byte sequence', async () => {
    const r = repo({ 'recipes/db.toml': Buffer.concat([Buffer.from(recipe('db')), Buffer.from([0x23, 0xe2, 0x82])]) });
    expect(where(diagnosticsOf(await load(r)))).toEqual([
      { code: CODES.TOML_SYNTAX, file: 'recipes/db.toml', path: '', line: undefined },
    ]);
  });
});

describe('every error of a revision in one result', () => {
  it('a plan with errors and a recipe with errors are reported together, sorted by file and line', async () => {
    const r = repo({
      [PLAN]:
        'device = "edge-1"\n' +
        planText([
          ['db', 'recipes/db.toml'],
          ['api', 'recipes/api.toml'],
          ['web', 'recipes/web.toml'],
          ['db', 'recipes/db.toml'],
        ]),
      'recipes/api.toml': recipe('api', ['db']).replace('interval = "1s"', 'interval = "1x"'),
      'recipes/web.toml': recipe('web', ['api']).replace('version = "1.0.0"', 'version = "1.0"'),
    });
    const diags = diagnosticsOf(await load(r));
    expect(where(diags)).toEqual([
      { code: CODES.UNKNOWN_KEY, file: PLAN, path: 'device', line: 1 },
      { code: CODES.DUPLICATE_COMPONENT, file: PLAN, path: 'components[3].name', line: 15 },
      { code: CODES.BAD_DURATION, file: 'recipes/api.toml', path: 'lifecycle.run.health.interval', line: 8 },
      { code: CODES.BAD_SEMVER, file: 'recipes/web.toml', path: 'metadata.version', line: 3 },
    ]);
  });

  it('an escaping plan entry, a missing recipe and an invalid recipe are reported together', async () => {
    const r = repo({
      [PLAN]: planText([
        ['db', 'recipes/db.toml'],
        ['api', '../api.toml'],
        ['web', 'recipes/web.toml'],
        ['x', 'recipes/x.toml'],
      ]),
      'recipes/db.toml': recipe('db') + 'colour = "red"\n',
    });
    expect(where(diagnosticsOf(await load(r)))).toEqual([
      { code: CODES.PATH_ESCAPE, file: PLAN, path: 'components[1].recipe', line: 7 },
      { code: CODES.FILE_NOT_FOUND, file: PLAN, path: 'components[3].recipe', line: 15 },
      { code: CODES.UNKNOWN_KEY, file: 'recipes/db.toml', path: 'lifecycle.run.health.colour', line: 9 },
    ]);
  });

  it('resolution errors name the recipe line', async () => {
    const r = repo({ 'recipes/web.toml': recipe('web', ['api', 'cache']) });
    expect(where(diagnosticsOf(await load(r)))).toEqual([
      { code: CODES.DEP_MISSING, file: 'recipes/web.toml', path: 'dependencies[1].name', line: 12 },
    ]);
  });
});

describe('the example repository at the project root', () => {
  it.each(['plans/edge.toml', 'plans/edge-processes.toml'])('%s loads without errors', async (plan) => {
    const res = await loadRevision(new DirectoryReader(PROJECT_ROOT), plan);
    if (!res.ok) throw new Error(JSON.stringify(res.diagnostics, null, 2));
    expect(res.state.planFile).toBe(plan);
    expect(res.state.layers).toEqual([['influxdb'], ['api', 'telemetry'], ['web']]);
    expect(res.state.startOrder).toEqual(['influxdb', 'api', 'telemetry', 'web']);
    expect(res.state.components.map((c) => [c.name, c.dependencies])).toEqual([
      ['influxdb', []],
      ['api', [{ component: 'influxdb', type: 'hard' }]],
      ['telemetry', [{ component: 'influxdb', type: 'ordering' }]],
      ['web', [{ component: 'api', type: 'hard' }]],
    ]);
  });

  it('the two plans run web differently', async () => {
    const reader = new DirectoryReader(PROJECT_ROOT);
    const [edge, processes] = await Promise.all([
      loadRevision(reader, 'plans/edge.toml'),
      loadRevision(reader, 'plans/edge-processes.toml'),
    ]);
    const webType = (res: Resolution) =>
      res.ok ? res.state.components.find((c) => c.name === 'web')?.recipe.lifecycle.run.type : undefined;
    expect([webType(edge), webType(processes)]).toEqual(['container', 'process']);
  });
});
