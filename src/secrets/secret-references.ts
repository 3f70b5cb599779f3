// Where recipes, plans and fleet.toml name a secret (SPEC §16): `{{secret.NAME}}` in any string, and the `name` of each
// `[[…secrets]]` entry (`[[lifecycle.run.secrets]]`, a service's). What `secret ls` shows as "used by" and `secret rm`
// warns about: a device refuses a revision whose plan reads a secret that is not there.
import { parse } from 'smol-toml';
import { listDocuments } from '../source/directory-reader.js';
import { MAX_DOCUMENT_BYTES } from '../source/repo-reader.js';
import type { SecretsRepo } from './secrets-repo.js';

const PLACEHOLDER = /\{\{\s*secret\.([A-Za-z0-9][A-Za-z0-9_-]{0,62})\s*\}\}/g;

/** Secret name → the files that name it, each once, sorted. */
export async function secretReferences(repo: SecretsRepo): Promise<Map<string, string[]>> {
  const found = new Map<string, Set<string>>();
  const add = (name: string, file: string) => found.set(name, (found.get(name) ?? new Set()).add(file));
  const files = (await listDocuments(repo.root)).filter(
    (f) => f.endsWith('.toml') && (f === 'fleet.toml' || f.startsWith('recipes/') || f.startsWith('plans/')),
  );
  for (const file of files) {
    let text: string | undefined;
    try {
      text = await repo.readText(file);
    } catch {
      continue; // unreadable (a link out, too large): `sign` and the devices say so, not this listing
    }
    if (text === undefined || text.length > MAX_DOCUMENT_BYTES) continue;
    for (const m of text.matchAll(PLACEHOLDER)) add(m[1]!, file);
    let doc: unknown;
    try {
      doc = parse(text);
    } catch {
      continue; // a file that does not parse names no secret file entry any reader would take
    }
    walk(doc, (name) => add(name, file));
  }
  return new Map([...found].map(([name, set]) => [name, [...set].sort()]));
}

/** Every `secrets = [{ name = "…" }, …]` array of tables, at any depth. */
function walk(value: unknown, onName: (name: string) => void): void {
  if (Array.isArray(value)) {
    for (const v of value) walk(v, onName);
    return;
  }
  if (typeof value !== 'object' || value === null || value instanceof Date) return;
  for (const [k, v] of Object.entries(value)) {
    if (k === 'secrets' && Array.isArray(v))
      for (const entry of v) {
        const name = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>).name : undefined;
        if (typeof name === 'string') onName(name);
      }
    walk(v, onName);
  }
}
