// A TOML path rendered the way diagnostics show it (errors.ts's `path`). Apart from toml-locate.ts, which finds a
// path's line: this only spells one.
import type { TomlPath } from './toml-locate.js';

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

/** Renders a path the way errors show it: `lifecycle.run.health.interval`, `artifacts[0].sha256`, `lifecycle.run.exec.env."MY.KEY"` (quote a key with JSON quoting only when it is not a bare key [A-Za-z0-9_-]+). The empty path renders as "" . */
export function formatTomlPath(path: TomlPath): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') {
      out += `[${seg}]`;
    } else {
      const key = BARE_KEY.test(seg) ? seg : JSON.stringify(seg);
      out += out === '' ? key : `.${key}`;
    }
  }
  return out;
}
