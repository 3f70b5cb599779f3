// `--help` / `-h` after a subcommand, for both programs: asked for in one place, before any command parses its flags,
// so that no command can answer it with Node's "Unknown option '--help'" (exit 2) and none has to declare it.

/**
 * True when `argv` (a command's arguments, the command's name left out) asks for help: `--help` or `-h` as an argument
 * of its own before a `--` separator. After `--` every argument is a positional (parseArgs' rule), so
 * `keystonectl logs -- -h` would name a component, not ask for help.
 */
export function asksForHelp(argv: readonly string[]): boolean {
  for (const arg of argv) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}
