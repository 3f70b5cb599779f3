// Configuration values in shell text (SPEC §6): each placeholder becomes one single-quoted word, and a placeholder is
// allowed only where such a word means exactly the value. That is decided by reading the script the way sh does,
// far enough to know the quoting at each placeholder; where this reader cannot be sure (backticks, here-documents,
// `case` inside `$(…)`), every later placeholder is refused rather than guessed at.

/** `value` as one sh word that means exactly `value`: single quotes, each `'` written as `'\''`. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** A placeholder (by its offsets in the script) that cannot stand where it is, and why. */
export interface ShellPlacementProblem {
  start: number;
  end: number;
  why: string;
  hint: string;
}

type Frame =
  /** Shell code: the script itself (`top`) or a `$(…)` inside it, with the parentheses opened since. */
  | { kind: 'code'; top: boolean; depth: number }
  | { kind: 'single' }
  | { kind: 'double' }
  /** `${…}`; what quotes mean inside it depends on whether it sits in double quotes. */
  | { kind: 'brace'; inDouble: boolean }
  /** `$((…))` or `((…))`: expanded as in double quotes (a quoted word's `$(…)` would run), then evaluated. */
  | { kind: 'arith'; depth: number }
  | { kind: 'comment' };

const WHERE: Record<Exclude<Frame['kind'], 'code'>, string> = {
  single: 'inside single quotes',
  double: 'inside double quotes',
  brace: 'inside ${…}',
  arith: 'inside an arithmetic expression $((…)), where quotes do not quote',
  comment: 'in a comment',
};
const WORD_BREAK = /[\s;&|()<>]/;
const ARITH_HINT =
  'arithmetic reads its text as code in bash: check that the value is a number first (case {{config.n}} in *[!0-9]*) exit 1;; esac) and keep it out of $((…))';
const UNQUOTE_HINT =
  'write it bare, outside quotes: each value is passed as one single-quoted word (mkdir -p {{config.dir}})';

/**
 * Every placeholder of `script` (spans as given, in order, not overlapping) that is not at a bare position of shell
 * code, where a single-quoted word is exactly the value. Bare means: outside quotes, `${…}` and comments, not after a
 * backslash or `$`, in the script or in a `$(…)`.
 */
export function shellPlacementProblems(
  script: string,
  spans: readonly { start: number; end: number }[],
): ShellPlacementProblem[] {
  const problems: ShellPlacementProblem[] = [];
  const at = new Map(spans.map((s) => [s.start, s.end]));
  const stack: Frame[] = [{ kind: 'code', top: true, depth: 0 }];
  let lost: { why: string; hint: string } | undefined;
  const refuse = (start: number, why: string, hint: string) => problems.push({ start, end: at.get(start)!, why, hint });

  let i = 0;
  while (i < script.length) {
    const end = at.get(i);
    const frame = stack[stack.length - 1]!;
    if (end !== undefined) {
      if (lost) refuse(i, lost.why, lost.hint);
      else if (frame.kind !== 'code')
        refuse(
          i,
          `it is ${WHERE[frame.kind]}`,
          frame.kind === 'comment'
            ? 'take the placeholder out of the comment'
            : frame.kind === 'arith'
              ? ARITH_HINT
              : UNQUOTE_HINT,
        );
      i = end;
      continue;
    }
    if (lost) {
      i++;
      continue;
    }
    const c = script[i]!;
    const next = script[i + 1];
    const loseAt = (why: string, hint: string) => {
      lost = { why, hint };
      i++;
    };
    switch (frame.kind) {
      case 'single':
        if (c === "'") stack.pop();
        i++;
        break;
      case 'comment':
        if (c === '\n') stack.pop();
        i++;
        break;
      case 'double':
      case 'brace':
        if (c === '\\') {
          if (at.has(i + 1)) {
            refuse(i + 1, 'it follows a backslash', UNQUOTE_HINT);
            i = at.get(i + 1)!;
          } else i += 2;
        } else if (c === '`') loseAt('it follows a `…` command substitution', 'use $(…) instead of backticks');
        else if (c === '$' && at.has(i + 1)) {
          refuse(i + 1, 'it follows a $', 'a placeholder is a whole value, not a variable name: remove the $');
          i = at.get(i + 1)!;
        } else if (c === '$' && next === '(' && script[i + 2] === '(') {
          stack.push({ kind: 'arith', depth: 2 });
          i += 3;
        } else if (c === '$' && next === '[') loseAt('it follows $[…], an arithmetic expression in bash', ARITH_HINT);
        else if (c === '$' && next === '(') {
          stack.push({ kind: 'code', top: false, depth: 0 });
          i += 2;
        } else if (c === '$' && next === '{') {
          stack.push({ kind: 'brace', inDouble: frame.kind === 'double' });
          i += 2;
        } else if (frame.kind === 'double' && c === '"') {
          stack.pop();
          i++;
        } else if (frame.kind === 'brace' && c === '}') {
          stack.pop();
          i++;
        } else if (frame.kind === 'brace' && c === '"') {
          stack.push({ kind: 'double' });
          i++;
        } else if (frame.kind === 'brace' && c === "'") {
          // Single quotes inside "${…}" quote in bash and not in dash: no placeholder after it can be placed safely.
          if (frame.inDouble)
            loseAt(
              'it follows single quotes inside "${…}", which shells read differently',
              'set a variable first, outside the quotes',
            );
          else {
            stack.push({ kind: 'single' });
            i++;
          }
        } else i++;
        break;
      case 'arith':
        if (
          c === "'" ||
          c === '"' ||
          c === '`' ||
          c === '\\' ||
          (c === '$' && (next === '(' || next === '{' || next === '['))
        )
          loseAt('it follows quoting or a substitution inside $((…))', ARITH_HINT);
        else {
          if (c === '(') frame.depth++;
          else if (c === ')' && --frame.depth === 0) stack.pop();
          i++;
        }
        break;
      case 'code': {
        const wordStart = i === 0 || WORD_BREAK.test(script[i - 1]!);
        if (c === '\\') {
          if (at.has(i + 1)) {
            refuse(i + 1, 'it follows a backslash', 'remove the backslash');
            i = at.get(i + 1)!;
          } else i += 2;
        } else if (c === "'") {
          stack.push({ kind: 'single' });
          i++;
        } else if (c === '"') {
          stack.push({ kind: 'double' });
          i++;
        } else if (c === '`') loseAt('it follows a `…` command substitution', 'use $(…) instead of backticks');
        else if (c === '<' && next === '<')
          loseAt(
            'it follows a here-document (<<)',
            "write the file with printf instead: printf 'port=%s\\n' {{config.port}} > file",
          );
        else if (c === '#' && wordStart) {
          stack.push({ kind: 'comment' });
          i++;
        } else if (c === '$') {
          if (at.has(i + 1)) {
            refuse(i + 1, 'it follows a $', 'a placeholder is a whole value, not a variable name: remove the $');
            i = at.get(i + 1)!;
            break;
          }
          if (next === '(' && script[i + 2] === '(') {
            stack.push({ kind: 'arith', depth: 2 });
            i += 3;
            break;
          }
          if (next === '[') {
            loseAt('it follows $[…], an arithmetic expression in bash', ARITH_HINT);
            break;
          }
          if (next === '(') stack.push({ kind: 'code', top: false, depth: 0 });
          else if (next === '{') stack.push({ kind: 'brace', inDouble: false });
          else if (next === "'") {
            loseAt("it follows $'…', which shells read differently", "use plain '…' quotes");
            break;
          }
          i += next === '(' || next === '{' ? 2 : 1;
        } else if (c === '(' && next === '(' && wordStart) {
          // bash's ((…)) arithmetic command; in plain sh two subshells, read the same way to be safe.
          stack.push({ kind: 'arith', depth: 2 });
          i += 2;
        } else if (c === '(') {
          frame.depth++;
          i++;
        } else if (c === ')') {
          if (frame.depth === 0 && !frame.top) stack.pop();
          else frame.depth = Math.max(0, frame.depth - 1);
          i++;
        } else if (!frame.top && wordStart && /^case\s/.test(script.slice(i, i + 5))) {
          // A `case` pattern's lone `)` would end this $(…) too early in the count above.
          loseAt('it follows a case inside $(…)', 'set a variable with the case first, outside $(…)');
        } else i++;
        break;
      }
    }
  }
  return problems;
}
