// docs/agent.md's "State directory" table and src/state-dir/layout.ts name the same entries, with the same modes and
// writers: every entry of the layout is a row of the table, and every row an entry of the layout.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AGE_KEY_FILE,
  API_TOKEN_FILE,
  componentPaths,
  DEVICE_FILE,
  LOCK_FILE,
  NOTES_CACHE_DIR,
  PID_FILE,
  REPORT_KEY_FILE,
  REPORT_PUB_FILE,
  SECRETS_ON_DISK,
  SECRETS_ROOT_RECORD,
  STATE_DB_FILE,
  STATE_DIR_LAYOUT,
} from '../../src/state-dir/layout.js';
import { PROJECT_ROOT } from '../support/example-repo.js';

/** The rows of the table under `## State directory`: path, mode, writer. */
function docsRows(): Array<{ path: string; mode: string; writer: string }> {
  const doc = readFileSync(join(PROJECT_ROOT, 'docs/agent.md'), 'utf8');
  const section = doc.split(/^## State directory\n/m)[1]?.split(/^## /m)[0];
  if (section === undefined) throw new Error('docs/agent.md has no "## State directory" section');
  return section
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) => {
      const [path, mode, writer] = l
        .split('|')
        .slice(1, 4)
        .map((c) => c.trim());
      return { path: path!.replace(/^`|`$/g, ''), mode: mode!, writer: writer! };
    });
}

describe('the state directory layout', () => {
  it('is the docs table, entry for entry, both ways', () => {
    const rows = docsRows();
    expect(rows.length).toBeGreaterThan(0);
    expect(rows).toEqual(STATE_DIR_LAYOUT.map((e) => ({ path: e.path, mode: e.mode, writer: e.writer })));
  });

  it('names each path once, and writers that exist', () => {
    const paths = STATE_DIR_LAYOUT.map((e) => e.path);
    expect(new Set(paths).size).toBe(paths.length);
    for (const e of STATE_DIR_LAYOUT) expect(existsSync(join(PROJECT_ROOT, 'src', e.writer)), e.writer).toBe(true);
  });

  it('puts a component, or a group unit, under components/', () => {
    expect(componentPaths('/s', 'api')).toEqual({
      workDir: '/s/components/api/work',
      logDir: '/s/components/api/logs',
    });
    expect(componentPaths('/s', 'app/web').workDir).toBe('/s/components/app/web/work');
  });

  it('is the only file of src/ that spells the distinctive names (the short ones, git/ or cache/, are words elsewhere too)', () => {
    const names = [
      API_TOKEN_FILE,
      LOCK_FILE,
      PID_FILE,
      STATE_DB_FILE,
      NOTES_CACHE_DIR,
      SECRETS_ROOT_RECORD,
      SECRETS_ON_DISK,
      DEVICE_FILE,
      REPORT_KEY_FILE,
      REPORT_PUB_FILE,
      AGE_KEY_FILE,
    ];
    const src = join(PROJECT_ROOT, 'src');
    const found: string[] = [];
    for (const file of readdirSync(src, { recursive: true, encoding: 'utf8' })) {
      if (!file.endsWith('.ts') || file === join('state-dir', 'layout.ts')) continue;
      const text = readFileSync(join(src, file), 'utf8');
      for (const name of names)
        if (text.includes(`'${name}'`) || text.includes(`"${name}"`)) found.push(`src/${file}: '${name}'`);
    }
    expect(found).toEqual([]);
  });
});
