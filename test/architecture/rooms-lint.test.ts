// The ESLint rule of the rooms (lint/rooms-plugin.mjs, run by npm run lint): it resolves each specifier as Node would,
// so a path that leaves and re-enters src/ or takes a detour is the room it lands in; it sees every form of import;
// and it refuses a computed import() in src/, which no rule could check (the review of issue 34 found the first rule,
// a pattern over the specifier's text, blind to all three).
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const eslint = new ESLint({ cwd: ROOT });

async function roomErrors(room: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, 'src', room, 'probe.ts') });
  return result!.messages.filter((m) => m.ruleId === 'rooms/import-boundary').map((m) => m.message);
}

describe('the rooms lint rule', { timeout: 60_000 }, () => {
  it('lets a room import from the rooms below it', async () => {
    expect(await roomErrors('agent', "import { diff } from '../core/diff.js';\nexport const d = diff;\n")).toEqual([]);
    expect(await roomErrors('cli', "export const m = () => import('../agent/agent.js');\n")).toEqual([]);
  });

  it.each([
    ['a plain import', "import { startAgent } from '../agent/agent.js';\nexport const s = startAgent;\n"],
    ['a type import', "import type { Agent } from '../agent/agent.js';\nexport type A = Agent;\n"],
    ['a re-export', "export * from '../agent/agent.js';\n"],
    ['an import()', "export const m = () => import('../agent/agent.js');\n"],
    ['an import type', "export type A = import('../agent/agent.js').Agent;\n"],
    [
      'a detour through another room',
      "import type { Agent } from '../core/../agent/agent.js';\nexport type A = Agent;\n",
    ],
    ['a path out of src/ and back', "import type { Agent } from '../../src/agent/agent.js';\nexport type A = Agent;\n"],
  ])('refuses an upward import: %s', async (_what, code) => {
    expect(await roomErrors('core', code)).toEqual([expect.stringMatching(/^core may not import from agent/)]);
  });

  it('refuses a computed import() and an import from outside src/', async () => {
    expect(await roomErrors('cli', "const m = './x.js';\nexport const y = () => import(m);\n")).toEqual([
      expect.stringMatching(/computed import\(\)/),
    ]);
    expect(await roomErrors('cli', "export * from '../../test/support/git-env.js';\n")).toEqual([
      expect.stringMatching(/outside it/),
    ]);
  });
});
