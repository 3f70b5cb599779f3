// The objects a thin pack's deltas may name outside it: the parent commit's tree and blob of the repository the
// corpus pack was made from (`git pack-objects --thin`), plus the base of the hand-built pack.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { BaseObject, GitObjectType, ReadBase } from '../../src/git/thin-pack.js';

const dir = fileURLToPath(new URL('./fixtures/git-bases/', import.meta.url));
const bases = new Map<string, BaseObject>(
  readdirSync(dir).map((f) => {
    const [oid, type] = f.split('.') as [string, GitObjectType];
    return [oid, { type, object: new Uint8Array(readFileSync(dir + f)) }];
  }),
);
/** "hello world\n", the base test/git/thin-pack.fuzz.test.ts builds its pack on. */
export const HELLO = Buffer.from('hello world\n');
bases.set(createHash('sha1').update(`blob ${HELLO.length}\0`).update(HELLO).digest('hex'), {
  type: 'blob',
  object: new Uint8Array(HELLO),
});

export const readBase: ReadBase = async (oid) => bases.get(oid);
