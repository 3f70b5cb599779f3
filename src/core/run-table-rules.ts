// The cross-field rules of one run table ([lifecycle.run] or [lifecycle.services.NAME]): its kind's own tables, its
// replicas and its secret files. Apart from recipe.ts, which applies them to each run table it finds.
import { CODES, type Diagnostic } from './errors.js';
import type { ParsedDocument } from './toml-document.js';
import { table, type RawTable } from './raw-table.js';

/** A secret file's path: a plain file name for a process; for a container also an absolute path; each path once. */
export function secretFileRules(doc: ParsedDocument<unknown>, runRaw: RawTable, at: string[]): Diagnostic[] {
  const list = runRaw.secrets;
  if (!Array.isArray(list)) return [];
  const out: Diagnostic[] = [];
  const container = (runRaw.type ?? 'process') === 'container';
  const seen = new Map<string, number>();
  list.forEach((entry, i) => {
    const path = table(entry)?.path;
    if (typeof path !== 'string' || path === '') return;
    const plainName = /^[A-Za-z0-9._-]+$/.test(path) && path !== '.' && path !== '..';
    const absolute =
      container &&
      path.startsWith('/') &&
      !path.split('/').some((p) => p === '..' || p === '.') &&
      !path.includes('\0');
    if (!plainName && !absolute)
      out.push(
        doc.diagnostic(
          CODES.SECRET_FILE,
          [...at, 'secrets', i, 'path'],
          `"${path}" is not ${container ? 'a file name or an absolute path in the container' : "a file name in the component's run directory"}`,
          container
            ? 'e.g. path = "db_password" (seen as /run/secrets/db_password) or "/etc/app/tls.key"'
            : 'e.g. path = "tls.key": letters, digits, ".", "_" and "-", no directories',
        ),
      );
    const first = seen.get(path);
    if (first !== undefined)
      out.push(
        doc.diagnostic(
          CODES.SECRET_FILE,
          [...at, 'secrets', i, 'path'],
          `"${path}" is given twice`,
          `first at secrets[${first}]`,
        ),
      );
    else seen.set(path, i);
  });
  return out;
}

/** `security`/`exec` belong to processes, `container` to containers; each kind needs its own table. */
export function runKindRules(doc: ParsedDocument<unknown>, runRaw: RawTable | undefined, at: string[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  if (!runRaw) return out;
  const where = at.join('.');
  const type = runRaw.type ?? 'process';
  if (type === 'container') {
    for (const key of ['security', 'exec'] as const)
      if (runRaw[key] !== undefined)
        out.push(
          doc.diagnostic(
            CODES.PROCESS_FIELD_ON_CONTAINER,
            [...at, key],
            `[${where}.${key}] is for processes, but this recipe runs a container`,
            key === 'security'
              ? `confine containers with [${where}.container] user, privileged and resources`
              : `set the command in [${where}.container] command`,
          ),
        );
    if (runRaw.container === undefined)
      out.push(
        doc.diagnostic(CODES.MISSING_FIELD, [...at, 'container'], `a container recipe needs [${where}.container]`),
      );
  } else if (type === 'process') {
    if (runRaw.container !== undefined)
      out.push(
        doc.diagnostic(
          CODES.CONTAINER_FIELD_ON_PROCESS,
          [...at, 'container'],
          `[${where}.container] is for containers, but this recipe runs a process`,
          'set type = "container" or remove the table',
        ),
      );
    if (runRaw.exec === undefined)
      out.push(
        doc.diagnostic(CODES.MISSING_FIELD, [...at, 'exec'], `a process recipe needs [${where}.exec] with a command`),
      );
  }
  return out;
}

/** Replicas of one component would all claim the same host ports: more than one is refused when it maps any. */
export function replicaRules(doc: ParsedDocument<unknown>, runRaw: RawTable | undefined, at: string[]): Diagnostic[] {
  const replicas = runRaw?.replicas;
  if (typeof replicas !== 'number' || replicas <= 1) return [];
  const ports = table(runRaw?.container)?.ports;
  if (!Array.isArray(ports) || ports.length === 0) return [];
  return [
    doc.diagnostic(
      CODES.INVALID_VALUE,
      [...at, 'replicas'],
      `replicas = ${replicas} with host ports: every replica would claim the same host ports`,
      'use replicas = 1, or remove [[lifecycle.run.container.ports]]',
    ),
  ];
}
