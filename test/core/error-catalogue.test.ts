// The error catalogue is the one list of codes: every `KS_*` in src/ is in it and in docs/errors.md, docs/errors.md is
// what the generator writes, and every entry is emitted somewhere (or says why not).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderErrorsDoc } from '../../lint/errors-doc.mjs';
import { CATALOGUE, ERROR_KINDS, errorAnchor, isErrorCode, type ErrorCode } from '../../src/core/error-catalogue.js';
import { CODES } from '../../src/core/errors.js';
import { INPUT_CODES } from '../../src/core/error-codes-input.js';
import { RUNNING_CODES } from '../../src/core/error-codes-running.js';
import type { PolicyCode } from '../../src/core/policy-check.js';
import type { AgentUpdateCode } from '../../src/agent-update/agent-update-error.js';
import type { ApiErrorCode } from '../../src/api/api-error.js';
import type { ArtifactCode } from '../../src/artifacts/artifact-error.js';
import type { CONFIG_CODES } from '../../src/cli/agent-config-error.js';
import type { ENGINE_ARG_CODES } from '../../src/cli/engine-args.js';
import type { IdentityCode } from '../../src/identity/identity-error.js';
import type { StatusDeliveryCode } from '../../src/report/commit-status.js';
import type { ContainerCode } from '../../src/runtime/container-error.js';
import type { RuntimeCode } from '../../src/runtime/runtime-error.js';
import type { TrustedFileCode } from '../../src/runtime/trusted-file.js';
import type { SecretCode } from '../../src/secrets/secret-error.js';
import type { StateDirCode } from '../../src/state-dir/safe-path.js';
import type { StateStoreCode } from '../../src/store/state-store-error.js';
import type { TrustCode } from '../../src/trust/trust-error.js';

// Each edge's union of codes is checked against the catalogue by tsc (npm run lint): a code missing from the
// catalogue, or misspelt in a union, fails to compile here.
type Catalogued<T extends ErrorCode> = T;
export type EdgeCodes = [
  Catalogued<AgentUpdateCode>,
  Catalogued<ApiErrorCode>,
  Catalogued<ArtifactCode>,
  Catalogued<(typeof CONFIG_CODES)[keyof typeof CONFIG_CODES]>,
  Catalogued<(typeof ENGINE_ARG_CODES)[keyof typeof ENGINE_ARG_CODES]>,
  Catalogued<IdentityCode>,
  Catalogued<PolicyCode>,
  Catalogued<StatusDeliveryCode>,
  Catalogued<ContainerCode>,
  Catalogued<RuntimeCode>,
  Catalogued<TrustedFileCode>,
  Catalogued<SecretCode>,
  Catalogued<StateDirCode>,
  Catalogued<StateStoreCode>,
  Catalogued<TrustCode>,
];

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');
const DOC = join(ROOT, 'docs', 'errors.md');

/** Words of the `KS_` form that are no code: identifiers and placeholders in comments. */
const NOT_CODES: Readonly<Record<string, string>> = {
  KS_CODE: "schema-rules.ts's params key for a custom issue's code, and the placeholder `KS_CODE: message` in comments",
};

/** `KS_FOO`, not `KS_GIT_*` (a family named in a comment): a code ends with a letter or digit and no `_` or `*` follows. */
const CODE_RE = /\bKS_[A-Z0-9_]*[A-Z0-9]\b(?![_*])/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sourceFiles(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
  );
}

/** Every code-like word in src/ but the catalogue itself, with the first file it is in. */
function codesInSrc(): Map<string, string> {
  const seen = new Map<string, string>();
  for (const file of sourceFiles(SRC)) {
    if (file === join(SRC, 'core', 'error-catalogue.ts')) continue;
    for (const m of readFileSync(file, 'utf8').matchAll(CODE_RE))
      if (!seen.has(m[0])) seen.set(m[0], file.slice(ROOT.length + 1));
  }
  return seen;
}

describe('the error catalogue', () => {
  const inSrc = codesInSrc();
  const doc = readFileSync(DOC, 'utf8');

  it('lists every code once: its two parts share none', () => {
    expect(Object.keys(INPUT_CODES).filter((c) => Object.hasOwn(RUNNING_CODES, c))).toEqual([]);
    expect(Object.keys(CATALOGUE)).toHaveLength(Object.keys(INPUT_CODES).length + Object.keys(RUNNING_CODES).length);
  });

  it('lists every KS_ code of src/', () => {
    const missing = [...inSrc].filter(([c]) => !isErrorCode(c) && !(c in NOT_CODES)).map(([c, f]) => `${c} (${f})`);
    expect(missing).toEqual([]);
  });

  it('has each of them in docs/errors.md, with its anchor', () => {
    const missing = [...inSrc.keys()].filter(
      (c) => isErrorCode(c) && !doc.includes(`<a id="${errorAnchor(c)}"></a>\`${c}\``),
    );
    expect(missing).toEqual([]);
  });

  it("is what docs/errors.md says: the file is the generator's (npm run errors-doc writes it)", () => {
    expect(doc).toBe(renderErrorsDoc(CATALOGUE));
  });

  it('has every entry emitted somewhere in src/, or says why not', () => {
    const unused = (Object.keys(CATALOGUE) as ErrorCode[]).filter((c) => {
      const said = (CATALOGUE[c] as { unused?: string }).unused;
      return inSrc.has(c) ? said !== undefined : said === undefined;
    });
    expect(unused).toEqual([]);
  });

  it('gives every entry a kind, an exit code of 1 or 2 and a one-line meaning', () => {
    for (const [code, e] of Object.entries(CATALOGUE)) {
      expect(ERROR_KINDS, code).toContain(e.kind);
      expect([1, 2], code).toContain(e.exit);
      expect(e.meaning, code).toMatch(/^[^\n]{10,200}$/);
    }
  });

  it("answers keystonectl's rule for API codes: a 400 or a 404 is exit code 2, any other status 1", () => {
    for (const [code, e] of Object.entries(CATALOGUE) as [string, { http?: number; exit: number }][]) {
      if (e.http !== undefined) expect(e.exit, code).toBe(e.http === 400 || e.http === 404 ? 2 : 1);
    }
  });

  it('keeps CODES as a view of it', () => {
    for (const code of Object.values(CODES)) expect(isErrorCode(code), code).toBe(true);
  });

  it('is linked from docs/README.md', () => {
    expect(readFileSync(join(ROOT, 'docs', 'README.md'), 'utf8')).toContain('[errors.md](errors.md)');
  });
});
