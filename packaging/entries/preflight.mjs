// What the bundle checks before it loads the rest of itself (its entries import the program dynamically): a Node
// new enough, and a state store built for this Node's ABI. Either missing is said in one line and exit 2 (bad
// input: the unit does not restart), never a stack trace from deep inside a module. Only Node's own modules are
// imported here, and nothing newer than Node 12 is used: this is the code an old Node runs (import.meta.dirname, for
// one, is 20.11's), and a module of the program imported statically would run before the check.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

export function preflight(program) {
  const { engines } = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
  const min = /(\d+)\.(\d+)/.exec(engines.node).slice(1).map(Number);
  const have = process.versions.node.split('.').map(Number);
  if (have[0] < min[0] || (have[0] === min[0] && have[1] < min[1]))
    fatal(
      program,
      `Node ${process.versions.node} (${process.execPath}) is older than keystone needs (${engines.node}): install the keystone-node package (amd64, arm64) or nodejs ${min.join('.')} or later`,
    );
  const dir = join(here, 'native');
  // The same name as src/store/sqlite-addon.ts's addonFileName (test/packaging/bundle.test.ts holds them together).
  const addon = `better_sqlite3-${process.platform}-${process.arch}-abi${process.versions.modules}.node`;
  if (!existsSync(join(dir, addon))) {
    const built = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.node')) : [];
    fatal(
      program,
      `this Node (${process.version}, ${process.arch}, modules ${process.versions.modules}) has no state store built for it in ${dir}` +
        ` (built: ${built.join(', ') || 'none'}): run keystone with keystone-node's Node (amd64, arm64) or a Node of one of those ABIs (115: Node 20, 127: 22, 137: 24)`,
    );
  }
}

function fatal(program, message) {
  process.stderr.write(`${program}: ${message}\n`);
  process.exit(2);
}
