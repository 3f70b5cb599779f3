// The character classes of TOML that the locator's scanner (toml-locate.ts) reads by: named char codes, bare-key and
// scalar-end tests, and the simple escapes of a basic string. Apart so the scanner file holds only the scan.

// Char codes, named so the scanner reads as TOML grammar.
export const TAB = 9,
  LF = 10,
  CR = 13,
  SPACE = 32,
  QUOTE = 34,
  HASH = 35,
  APOS = 39,
  COMMA = 44,
  DOT = 46;
export const EQUALS = 61,
  LBRACKET = 91,
  BACKSLASH = 92,
  RBRACKET = 93,
  LBRACE = 123,
  RBRACE = 125;

export function isBareChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 45;
}

/** Where an unquoted scalar (number, bool, date-time, inf/nan) ends; date-times may contain a space. */
export function endsScalar(c: number): boolean {
  return c === COMMA || c === RBRACKET || c === RBRACE || c === LF || c === HASH;
}

export const SIMPLE_ESCAPES: Record<string, string> = {
  b: '\b',
  t: '\t',
  n: '\n',
  f: '\f',
  r: '\r',
  e: '\x1b',
  '"': '"',
  '\\': '\\',
};
