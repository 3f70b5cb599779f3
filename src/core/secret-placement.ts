// Where `{{secret.NAME}}` may stand (SPEC §16): only in an environment variable's value, which reaches the program and
// nothing else. In argv (`args`, a container's `command`), shell code (the install script, a `cmd:` check) or a health
// check, `ps`, logs and the engine's own inspect output would show the value; in an export it would reach another
// component that never named it. Checked where a recipe is parsed (what it writes itself) and again once its
// configuration is resolved (a `{{config.…}}` whose value holds a secret).

/** Why a secret cannot stand at `rel`, a path relative to a run (`exec.env.DB_URL`); undefined where it may. */
export function secretPlacementProblem(rel: readonly (string | number)[]): string | undefined {
  if (rel.length === 3 && (rel[0] === 'exec' || rel[0] === 'container') && rel[1] === 'env') return undefined;
  const where = rel.length === 0 ? 'here' : `in ${rel.join('.')}`;
  if (rel[0] === 'health') return `a secret cannot stand ${where}: a health check is shown in status, logs and reports`;
  if (rel[1] === 'args' || rel[1] === 'command')
    return `a secret cannot stand ${where}: a program's arguments are visible to every user of the device (ps) and to the engine's inspect`;
  return `a secret cannot stand ${where}`;
}

export const SECRET_PLACEMENT_HINT =
  'put it in an environment variable (exec.env / container.env), or give it as a file: [[lifecycle.run.secrets]] name = "…" path = "…"';
