// Maps TOML paths to source lines. smol-toml gives values without positions, but validation errors
// must name the line, so this module scans the already-parsed text once more and records where each
// key, table and array element is first mentioned.
//
// Design constraints and why:
// - One forward pass; `i` never moves back, and line numbers come from a cursor that only moves
//   forward too, so the whole scan is O(n) (we run it over thousands of files in the benchmark).
// - Nesting uses an explicit stack, not recursion: hostile input like `a = [[[[...` cannot overflow
//   the call stack, so the function never throws.
// - Every loop step consumes input or pops the stack, so garbage cannot make it loop forever.
// - Positions live in a trie (Map per table, array per list) rather than a map of joined path
//   strings: recording a dotted key costs O(segments), not O(segments²), and odd keys such as
//   `__proto__` or `a.b` need no escaping.
import {
  APOS,
  BACKSLASH,
  COMMA,
  CR,
  DOT,
  EQUALS,
  HASH,
  LBRACE,
  LBRACKET,
  LF,
  QUOTE,
  RBRACE,
  RBRACKET,
  SIMPLE_ESCAPES,
  SPACE,
  TAB,
  endsScalar,
  isBareChar,
} from './toml-chars.js';

export type TomlPath = ReadonlyArray<string | number>;

export interface TomlLocator {
  /** 1-based line where the value at exactly this path is defined (the key's line, a table header's line, an array-of-tables element's header line, an inline-table/array element's line), or undefined. */
  exact(path: TomlPath): number | undefined;
  /** The line of the path, else of its nearest ancestor that has one, else undefined. */
  line(path: TomlPath): number | undefined;
}

interface Node {
  line: number;
  keys?: Map<string, Node>;
  /** Elements of an inline array or of an array of tables. */
  items?: Node[];
}

/** An open `[` or `{` value: `items` is set for arrays, unset for inline tables. */
interface Frame {
  node: Node;
  items: Node[] | undefined;
}

/** Scans valid TOML source and returns a locator. */
export function locateToml(text: string): TomlLocator {
  const s = text;
  const n = s.length;
  const root: Node = { line: 0 };
  const stack: Frame[] = [];
  let table = root; // the table that `key = value` lines at top level belong to
  let i = 0;

  // Lines are counted lazily up to the asked position; positions only grow, so this stays linear
  // and no skipping routine has to remember to count newlines.
  let linePos = 0;
  let lineNo = 1;
  const lineAt = (p: number): number => {
    for (; linePos < p; linePos++) if (s.charCodeAt(linePos) === LF) lineNo++;
    return lineNo;
  };

  // A key path implicitly defined more than once (`[a.b]` then `[a]`) keeps its first mention.
  const child = (parent: Node, key: string, line: number): Node => {
    const keys = (parent.keys ??= new Map());
    let node = keys.get(key);
    if (!node) keys.set(key, (node = { line }));
    return node;
  };

  // CR counts as blank so CRLF files need no special casing.
  const skipBlanks = (): void => {
    for (let c = s.charCodeAt(i); c === SPACE || c === TAB || c === CR; c = s.charCodeAt(++i));
  };

  /** Skips blanks, newlines and comments (TOML 1.1, which smol-toml accepts, allows them inside inline tables too). */
  const skipVoid = (): void => {
    for (;;) {
      skipBlanks();
      const c = s.charCodeAt(i);
      if (c === LF) i++;
      else if (c === HASH) {
        const eol = s.indexOf('\n', i);
        i = eol < 0 ? n : eol;
      } else return;
    }
  };

  /** Reads a single-line quoted string at `i`; returns its decoded value when asked (keys are compared decoded, as smol-toml reports them; values need no decoding). */
  const readQuoted = (decode: boolean): string => {
    const basic = s.charCodeAt(i) === QUOTE;
    const quote = basic ? QUOTE : APOS;
    let out = '';
    let start = ++i;
    while (i < n) {
      const c = s.charCodeAt(i);
      if (c === quote) {
        if (decode) out += s.slice(start, i);
        i++;
        return out;
      }
      if (c === LF) break; // unterminated: stop at the line end so the next line is still scanned
      if (basic && c === BACKSLASH && !decode) i += 2;
      else if (basic && c === BACKSLASH) {
        out += s.slice(start, i);
        const e = s.charAt(i + 1);
        i += 2;
        const hexLen = e === 'u' ? 4 : e === 'U' ? 8 : e === 'x' ? 2 : 0;
        if (hexLen > 0) {
          const cp = Number.parseInt(s.slice(i, i + hexLen), 16);
          i += hexLen;
          // Guarded because String.fromCodePoint throws on surrogates or out-of-range values.
          if (cp >= 0 && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff)) out += String.fromCodePoint(cp);
        } else {
          out += SIMPLE_ESCAPES[e] ?? e;
        }
        start = i;
      } else i++;
    }
    i = Math.min(i, n);
    return decode ? out + s.slice(start, i) : out;
  };

  /** Skips any string value; multi-line ones are skipped whole so their inner lines are never read as keys or headers. */
  const skipString = (quote: number): void => {
    if (s.charCodeAt(i + 1) !== quote || s.charCodeAt(i + 2) !== quote) {
      readQuoted(false);
      return;
    }
    for (i += 3; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c === BACKSLASH && quote === QUOTE)
        i++; // escaped char, possibly a quote or a newline
      else if (c === quote && s.charCodeAt(i + 1) === quote && s.charCodeAt(i + 2) === quote) {
        i += 3;
        // `"""a"""""` ends with the last three quotes: up to two more belong to the content.
        if (s.charCodeAt(i) === quote) i++;
        if (s.charCodeAt(i) === quote) i++;
        return;
      }
    }
    i = Math.min(i, n);
  };

  /** Reads a key, possibly dotted and quoted, with blanks around dots; returns [] when none starts at `i`. */
  const readKey = (): string[] => {
    const segs: string[] = [];
    for (;;) {
      skipBlanks();
      const c = s.charCodeAt(i);
      if (c === QUOTE || c === APOS) segs.push(readQuoted(true));
      else if (isBareChar(c)) {
        const start = i;
        while (i < n && isBareChar(s.charCodeAt(i))) i++;
        segs.push(s.slice(start, i));
      } else return segs;
      skipBlanks();
      if (s.charCodeAt(i) !== DOT) return segs;
      i++;
    }
  };

  /** Starts the value at `i` that belongs to `node`: containers open a frame, scalars and strings are skipped. */
  const value = (node: Node): void => {
    const c = s.charCodeAt(i);
    if (c === LBRACKET) {
      i++;
      stack.push({ node, items: (node.items ??= []) });
    } else if (c === LBRACE) {
      i++;
      stack.push({ node, items: undefined });
    } else if (c === QUOTE || c === APOS) {
      skipString(c);
    } else if (i < n && c !== LF) {
      // At least one char is consumed so a stray `}` inside an array cannot stall the loop.
      do i++;
      while (i < n && !endsScalar(s.charCodeAt(i)));
    }
  };

  /** `key = value` relative to `base`; every segment of a dotted key is defined on this line. */
  const keyValue = (base: Node): void => {
    const line = lineAt(i);
    const start = i;
    const segs = readKey();
    if (segs.length === 0) {
      i = start + 1; // not a key: skip one char of garbage
      return;
    }
    let node = base;
    for (const key of segs) node = child(node, key, line);
    skipBlanks();
    if (s.charCodeAt(i) !== EQUALS) return; // garbage; readKey consumed input, so the loop moves on
    i++;
    skipBlanks();
    value(node);
  };

  /** `[a.b]` or `[[a.b]]`: makes that table current; arrays of tables get a new element. */
  const header = (): void => {
    const line = lineAt(i);
    i++;
    const isArray = s.charCodeAt(i) === LBRACKET;
    if (isArray) i++;
    const segs = readKey();
    if (s.charCodeAt(i) === RBRACKET) {
      i++;
      if (isArray && s.charCodeAt(i) === RBRACKET) i++;
    }
    if (segs.length === 0) return;
    let node = root;
    for (let k = 0; k < segs.length; k++) {
      node = child(node, segs[k] ?? '', line);
      // Intermediate arrays of tables mean their latest element: `[[a]]` then `[[a.b]]` extends a[-1].
      if (k < segs.length - 1) node = node.items?.at(-1) ?? node;
    }
    if (isArray) {
      const element: Node = { line };
      (node.items ??= []).push(element);
      node = element;
    }
    table = node;
  };

  while (i < n) {
    skipVoid();
    if (i >= n) break;
    const c = s.charCodeAt(i);
    const top = stack.at(-1);
    if (!top) {
      if (c === LBRACKET) header();
      else keyValue(table);
    } else if (c === (top.items ? RBRACKET : RBRACE)) {
      i++;
      stack.pop();
    } else if (c === COMMA) {
      i++;
    } else if (top.items) {
      const element: Node = { line: lineAt(i) };
      top.items.push(element);
      value(element);
    } else {
      keyValue(top.node);
    }
  }

  const find = (path: TomlPath, nearest: boolean): number | undefined => {
    let node: Node | undefined = root;
    let found: number | undefined;
    for (const seg of path) {
      node = typeof seg === 'number' ? node.items?.[seg] : node.keys?.get(seg);
      if (!node) return nearest ? found : undefined;
      found = node.line;
    }
    return found;
  };

  return {
    exact: (path) => find(path, false),
    line: (path) => find(path, true),
  };
}
