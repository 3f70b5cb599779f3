// Mutations of corpus seeds, the way coverage-guided fuzzers mutate (AFL's havoc stage): flips, inserts, deletes,
// duplications, splices with another seed and the format's own tokens, a few at a time. A valid seed with two
// bytes changed gets past the checks that arbitrary bytes never pass.
import fc from 'fast-check';

/** Bytes that end or confuse most formats, tried in every target besides its own dictionary. */
const GENERIC_TOKENS = [
  '\n',
  '\r\n',
  '\0',
  ' ',
  '"',
  "'",
  '\\',
  '=',
  '[',
  ']',
  '{',
  '}',
  '/',
  '..',
  '0000',
  'ffff',
  '\u00ff',
  '\uffff',
  '\u{1f600}',
  '-1',
  '4294967296',
  '9'.repeat(20),
];

type Op =
  | { op: 'flip'; at: number; byte: number }
  | { op: 'insert'; at: number; bytes: Uint8Array }
  | { op: 'delete'; at: number; length: number }
  | { op: 'duplicate'; at: number; length: number; to: number }
  | { op: 'token'; at: number; token: number; replace: boolean }
  | { op: 'splice'; at: number; other: number; from: number }
  | { op: 'cut'; at: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({ op: fc.constant('flip' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('insert' as const),
      at: fc.nat(),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({ op: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 32 }) }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('duplicate' as const),
      at: fc.nat(),
      length: fc.integer({ min: 1, max: 64 }),
      to: fc.nat(),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({ op: fc.constant('token' as const), at: fc.nat(), token: fc.nat(), replace: fc.boolean() }),
    weight: 4,
  },
  {
    arbitrary: fc.record({ op: fc.constant('splice' as const), at: fc.nat(), other: fc.nat(), from: fc.nat() }),
    weight: 1,
  },
  { arbitrary: fc.record({ op: fc.constant('cut' as const), at: fc.nat() }), weight: 1 },
);

function apply(input: Buffer, o: Op, seeds: readonly Uint8Array[], tokens: readonly Buffer[]): Buffer {
  const at = o.at % (input.length + 1);
  switch (o.op) {
    case 'flip': {
      if (input.length === 0) return Buffer.from([o.byte]);
      const out = Buffer.from(input);
      out[o.at % input.length] = o.byte;
      return out;
    }
    case 'insert':
      return Buffer.concat([input.subarray(0, at), o.bytes, input.subarray(at)]);
    case 'delete':
      return Buffer.concat([input.subarray(0, at), input.subarray(at + o.length)]);
    case 'duplicate': {
      const chunk = input.subarray(at, at + o.length);
      const to = o.to % (input.length + 1);
      return Buffer.concat([input.subarray(0, to), chunk, input.subarray(to)]);
    }
    case 'token': {
      const token = tokens[o.token % tokens.length]!;
      return Buffer.concat([input.subarray(0, at), token, input.subarray(o.replace ? at + token.length : at)]);
    }
    case 'splice': {
      const other = seeds[o.other % seeds.length]!;
      return Buffer.concat([input.subarray(0, at), other.subarray(o.from % (other.length + 1))]);
    }
    case 'cut':
      return input.subarray(0, at);
  }
}

/** Seeds with 1–6 mutations each, capped at `maxBytes`; arbitrary bytes when there are no seeds. */
export function mutatedSeeds(
  seeds: readonly Uint8Array[],
  dictionary: readonly string[],
  maxBytes: number,
): fc.Arbitrary<Uint8Array> {
  if (seeds.length === 0) return fc.uint8Array({ maxLength: Math.min(maxBytes, 512) });
  const tokens = [...dictionary, ...GENERIC_TOKENS].map((t) => Buffer.from(t, 'utf8'));
  return fc.tuple(fc.nat({ max: seeds.length - 1 }), fc.array(op, { minLength: 1, maxLength: 6 })).map(([i, ops]) => {
    let out: Buffer = Buffer.from(seeds[i]!);
    for (const o of ops) out = apply(out, o, seeds, tokens);
    return new Uint8Array(out.subarray(0, maxBytes));
  });
}

/** Every input a target gets: arbitrary bytes, its grammar's documents, and mutated seeds (the most). */
export function targetInputs(
  seeds: readonly Uint8Array[],
  t: { maxBytes: number; dictionary?: readonly string[]; structured?: fc.Arbitrary<Uint8Array> },
): fc.Arbitrary<Uint8Array> {
  const bytes = fc.uint8Array({ maxLength: Math.min(t.maxBytes, 1024) });
  const mutated = mutatedSeeds(seeds, t.dictionary ?? [], t.maxBytes);
  const seedsAsIs = seeds.length ? fc.constantFrom(...seeds) : bytes;
  return fc.oneof(
    { arbitrary: bytes, weight: 2 },
    { arbitrary: seedsAsIs, weight: 1 },
    { arbitrary: mutated, weight: 5 },
    ...(t.structured ? [{ arbitrary: t.structured, weight: 3 }] : []),
  );
}
