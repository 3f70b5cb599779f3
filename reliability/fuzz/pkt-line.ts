// pkt-line framing for structure-aware inputs: what a Git server sends, line by line.
import fc from 'fast-check';

export const pkt = (s: string | Uint8Array): Buffer => {
  const b = Buffer.from(s);
  return Buffer.concat([Buffer.from((b.length + 4).toString(16).padStart(4, '0')), b]);
};
export const FLUSH = Buffer.from('0000');

export const OIDS = [
  'a'.repeat(40),
  '7fc10b1f5390c93d88da483df8fd62ff16f30672',
  '0'.repeat(40),
  'A'.repeat(40),
  'g'.repeat(40),
  'b'.repeat(64),
];
export const REFS = [
  'HEAD',
  'refs/heads/main',
  'refs/heads/feature',
  'refs/tags/v1',
  'refs/notes/keystone-devices/dev-1',
  `refs/keystone-rollout/canary/0a/dev-1/${'a'.repeat(40)}-success`,
  'refs/heads/a..b',
  'refs/heads/x.lock',
  'refs/heads/',
  'refs/heads/a b',
  'refs/heads/@{x}',
  '@',
  'capabilities^{}',
];

/** Lines a server might send (`<oid> <ref>[\0caps | attributes]`), framed, then a flush or not. */
export const refLines = fc
  .tuple(
    fc.array(
      fc.oneof(
        fc
          .tuple(
            fc.constantFrom(...OIDS),
            fc.constantFrom(...REFS),
            fc.constantFrom(
              '',
              '\n',
              ' peeled:' + 'a'.repeat(40) + '\n',
              ' symref-target:refs/heads/main\n',
              '\0thin-pack side-band-64k no-progress\n',
              '\0multi_ack\n',
            ),
          )
          .map(([o, r, t]) => pkt(`${o} ${r}${t}`)),
        fc.constantFrom(
          pkt('# service=git-upload-pack\n'),
          FLUSH,
          pkt('ERR no such repository\n'),
          Buffer.from('0001'),
          Buffer.from('0004'),
          Buffer.from('fff0'),
        ),
        fc.string({ maxLength: 30 }).map((s) => pkt(s)),
      ),
      { maxLength: 8 },
    ),
    fc.boolean(),
  )
  .map(([lines, flush]) => new Uint8Array(Buffer.concat([...lines, ...(flush ? [FLUSH] : [])])));
