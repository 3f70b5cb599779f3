// `[agent]` in fleet.toml (SPEC §17): the agent version a fleet runs and, per Debian architecture, the package that
// carries it, signed with everything else. A target may carry its own `agent` table, which replaces the fleet's for
// its devices (a canary target on the next version). Pure: the schema and which section a device follows; fetching,
// checking and switching to the package is agent-update/'s.
import * as v from 'valibot';
import { minLength, refine, strictObject } from './valid.js';
import { CODES, type Diagnostic } from './errors.js';
import { escapesRepository } from './recipe.js';
import type { ParsedDocument } from './toml-document.js';
import { durationText, issue, semverText } from './schema-rules.js';
import { parseDuration } from './duration.js';

/** The architectures Keystone ships packages for (SPEC §18), by their Debian names. */
export const DEB_ARCHES = ['amd64', 'arm64', 'armhf'] as const;
export type DebArch = (typeof DEB_ARCHES)[number];

const sha256 = v.pipe(
  v.string(),
  refine<string>((t, ctx) => {
    if (!/^[0-9a-f]{64}$/i.test(t))
      issue(
        ctx,
        CODES.AGENT_PACKAGE_DIGEST,
        `"${t}" is not a sha256 digest`,
        '64 hexadecimal characters: sha256sum keystone_<version>_<arch>.deb',
      );
  }),
);

const agentPackage = strictObject({
  // https, http, file:///, or a path relative to the repository root (a package committed beside fleet.toml).
  uri: v.pipe(v.string(), minLength(1)),
  sha256,
});

export const agentSectionSchema = strictObject({
  // As `keystone --version` prints it (npm's form: 0.2.0, 0.3.0-rc.1); the package's Debian Version must be its Debian
  // form (debianVersionOf: 0.3.0~rc.1), checked when the package is staged (agent-update/stage-agent-package.ts).
  version: semverText,
  // How long the new agent has, from its start, to report `success` for the commit before the previous one is put back.
  deadline: v.pipe(
    v.optional(durationText, '5m'),
    v.transform((t) => parseDuration(t) as number),
  ),
  allow_downgrade: v.optional(v.boolean(), false),
  packages: strictObject({
    amd64: v.optional(agentPackage),
    arm64: v.optional(agentPackage),
    armhf: v.optional(agentPackage),
  }),
});

export type AgentSection = v.InferOutput<typeof agentSectionSchema>;
export type AgentPackage = v.InferOutput<typeof agentPackage>;

/** The agent section a device follows: its target's own, else the fleet's; undefined: the fleet does not say. */
export function agentSectionFor(
  fleet: { agent?: AgentSection | undefined },
  target: { agent?: AgentSection | undefined } | undefined,
): AgentSection | undefined {
  return target?.agent ?? fleet.agent;
}

/**
 * An npm version in Debian's form, as packaging/deb-version.mjs builds the package's Version: a pre-release sorts before
 * its release with a tilde (`0.3.0-rc.1` → `0.3.0~rc.1`, its hyphens become dots), build metadata stays (`+b7`).
 */
export function debianVersionOf(version: string): string {
  const m = /^(\d+\.\d+\.\d+)(?:-([0-9A-Za-z.-]+))?(\+[0-9A-Za-z.+]+)?$/.exec(version.trim());
  return m ? `${m[1]}${m[2] ? `~${m[2].replaceAll('-', '.')}` : ''}${m[3] ?? ''}` : version.trim();
}

/** Node's name for this machine's architecture as Debian names it; undefined where Keystone ships no package. */
export function debArchOf(nodeArch: string): DebArch | undefined {
  return nodeArch === 'x64' ? 'amd64' : nodeArch === 'arm64' ? 'arm64' : nodeArch === 'arm' ? 'armhf' : undefined;
}

/** What the schema cannot say about an `[agent]` table at `path` (fleet-wide or a target's): where each package is. */
export function checkAgentSection(
  raw: unknown,
  path: readonly (string | number)[],
  doc: Pick<ParsedDocument<unknown>, 'diagnostic'>,
): Diagnostic[] {
  const packages = (raw as { packages?: unknown } | undefined)?.packages;
  if (typeof packages !== 'object' || packages === null) return [];
  const out: Diagnostic[] = [];
  for (const [arch, p] of Object.entries(packages)) {
    const uri = (p as { uri?: unknown } | undefined)?.uri;
    if (typeof uri !== 'string') continue;
    const at = [...path, 'packages', arch, 'uri'];
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri)?.[1]?.toLowerCase();
    if (scheme !== undefined) {
      if (!['https', 'http', 'file'].includes(scheme))
        out.push(
          doc.diagnostic(
            CODES.ARTIFACT_BAD_URI,
            at,
            `unsupported package scheme "${scheme}:"`,
            'https, http, file:///, or a path relative to the repository root',
          ),
        );
    } else if (uri.startsWith('/') || escapesRepository(uri))
      out.push(
        doc.diagnostic(
          CODES.PATH_ESCAPE,
          at,
          `"${uri}" points outside the repository`,
          'a path relative to the repository root, or file:///absolute/path',
        ),
      );
  }
  return out;
}
