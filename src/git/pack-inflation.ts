// What a fetched pack may inflate to. The fetch's byte cap counts bytes on the wire, and zlib turns 5 MiB of a pack
// into a 1 GiB blob of zeros: isomorphic-git inflates every object of a fetched pack to index it (and the thin-pack
// completion before it keeps them all), so such a blob beside the signed files took an agent from 100 MiB to 4.2 GiB,
// and one with 1 GiB of memory was killed at every restart (issue 28, finding 3). So each fetched pack is walked here
// before anything else holds it: each object's header states its size, which is checked BEFORE it is inflated, then
// it is inflated to exactly that size at most (a header that lies fails there) and let go; a delta is charged for
// its instructions and for the object it produces (the size its instructions start with). A pack past a limit is
// refused whole with KS_GIT_PACK_TOO_LARGE: nothing of it is stored, and the device keeps what it runs.
import { OperationError } from '../core/errors.js';
import { deltaResultSize, OFS_DELTA, REF_DELTA, walkPack, type PackEntryHeader } from './pack-walk.js';

export interface PackInflationLimits {
  /** The largest object (or delta result) a fetched pack may hold, inflated. */
  maxObjectBytes: number;
  /** What every object and delta of one fetched pack may inflate to, together. */
  maxInflatedBytes: number;
  /** Objects one fetched pack may hold (each costs the indexing a few hundred bytes of memory). */
  maxObjects: number;
}

/**
 * The defaults. 32 MiB an object: twice the largest file a revision is read for (SHA256SUMS, 16 MiB; a recipe or a
 * plan is at most 1 MiB), and room for an artifact kept in the repository (larger ones belong on HTTP, where they
 * are streamed to disk). 128 MiB a fetch in all: as much as the wire cap lets arrive uncompressed, a few times what
 * the first fetch of a 10,000-component fleet inflates to, and well under the agent's memory (~100 MiB at rest) on a
 * device with 1 GiB. 200,000 objects: twenty times the files of such a fleet.
 */
export const PACK_INFLATION_LIMITS: Readonly<PackInflationLimits> = {
  maxObjectBytes: 32 * 1024 * 1024,
  maxInflatedBytes: 128 * 1024 * 1024,
  maxObjects: 200_000,
};

export interface PackInflation {
  objects: number;
  /** Every byte inflating the pack produces: objects, delta instructions and the objects deltas produce. */
  inflatedBytes: number;
  /** Deltas against a base named by id, which may be outside the pack (a thin pack, to complete). */
  refDeltas: number;
}

/**
 * Walks `pack` (a fetched pack, its checksum already checked) holding one object at a time. Throws OperationError
 * KS_GIT_PACK_TOO_LARGE past a limit (before the object over it is inflated), KS_GIT_THIN_PACK for a malformed pack.
 */
export function checkPackInflation(pack: Buffer, limits: PackInflationLimits = PACK_INFLATION_LIMITS): PackInflation {
  const malformed = (message: string): never => {
    throw new OperationError('KS_GIT_THIN_PACK', message);
  };
  const cost: PackInflation = { objects: 0, inflatedBytes: 0, refDeltas: 0 };
  if (pack.length >= 12 && pack.readUInt32BE(8) > limits.maxObjects)
    throw tooLarge(`the fetched pack holds ${pack.readUInt32BE(8)} objects, over the limit of ${limits.maxObjects}`);
  const charge = (bytes: number, h: PackEntryHeader, what: string) => {
    if (bytes > limits.maxObjectBytes)
      throw tooLarge(
        `the fetched pack holds ${what} at offset ${h.offset} that inflates to ${bytes} bytes, over the limit of ${limits.maxObjectBytes} an object`,
      );
    cost.inflatedBytes += bytes;
    if (cost.inflatedBytes > limits.maxInflatedBytes)
      throw tooLarge(
        `the fetched pack inflates to more than ${limits.maxInflatedBytes} bytes (past object ${cost.objects + 1}, at offset ${h.offset})`,
      );
  };
  walkPack(
    pack,
    malformed,
    (h) => {
      const delta = h.kind === OFS_DELTA || h.kind === REF_DELTA;
      charge(h.size, h, delta ? 'a delta' : 'an object');
      if (h.kind === REF_DELTA) cost.refDeltas++;
    },
    (h, data) => {
      cost.objects++;
      if (h.kind === OFS_DELTA || h.kind === REF_DELTA)
        charge(deltaResultSize(data, malformed), h, 'a delta whose object');
    },
  );
  return cost;
}

function tooLarge(message: string): OperationError {
  return new OperationError(
    'KS_GIT_PACK_TOO_LARGE',
    `${message}: refused before inflating it, and nothing of the pack kept`,
  );
}
