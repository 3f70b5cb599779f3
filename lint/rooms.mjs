// The rooms of src/, lowest first: a room may import from the rooms listed before it and from nowhere else (type
// imports and dynamic import() included). One table for ESLint's import rule (rooms-plugin.mjs) and for the test that
// also walks dynamic imports and forbids every import circle (test/architecture/rooms.test.ts). Why this order: a phase
// only reads what earlier phases produced — Git bytes, then a revision, then its loaded state, then what runs, then the
// reports of it, then the programs that drive it all (docs/architecture.md).
export const ROOMS = [
  'core', // pure: schemas, the diff, the graph, the gate — no I/O, imports no other room
  'package-manifest.ts', // src/package-manifest.ts: the package's version and files (a leaf, not a folder)
  'log',
  'state-dir', // the state directory's layout and its safe file access
  'git', // the Git wire protocol and the fetch cache; commit ids
  'source', // revisions: a directory, a Git commit's tree, a manual apply
  'trust', // signatures over a revision's bytes
  'identity', // the device's key, certificates, report signatures
  'secrets',
  'load', // a revision's recipes, plans and fleet, loaded and checked
  'artifacts',
  'runtime', // processes and containers
  'store', // SQLite
  'report', // commit statuses: the outbox, Git notes, GitHub
  'fleet-view', // reading the fleet's reports back
  'agent-update',
  'agent', // the spine
  'api',
  'doctor',
  'cli',
];
/** Rooms that stand apart: they import no other room and none imports them. */
export const APART = ['dev'];

/** The rooms `room` may import from. */
export function allowedFrom(room) {
  const i = ROOMS.indexOf(room);
  return i < 0 ? [] : ROOMS.slice(0, i);
}
