// The versioned component hash (SPEC §4 Identity): everything that affects how a component runs, nothing else.
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  componentHash,
  CURRENT_HASH_VERSION,
  hashVersion,
  sameIdentity,
} from '../../src/core/identity.js';
import { planEntry, recipe, type ComponentSpec } from '../support/state-builder.js';

const DIGEST_A = 'a'.repeat(64);
const DIGEST_B = 'b'.repeat(64);

const base: ComponentSpec = {
  name: 'influxdb',
  id: 'com.acme.influxdb',
  version: '2.7.5',
  description: 'Time-series database',
  command: './influxd',
  args: ['--bolt-path', 'data/influxd.bolt'],
  env: { LOG_LEVEL: 'info', TZ: 'UTC' },
  artifacts: [{ uri: 'https://artifacts.acme.com/influxdb.tar.gz', sha256: DIGEST_A, unpack: true }],
  health: { check: 'http://127.0.0.1:8086/health', interval: '10s', timeout: '3s', failure_threshold: 6 },
  deps: [{ on: 'com.acme.other', type: 'hard' }],
  edit: (raw) => {
    raw.lifecycle!.install = { script: 'mkdir -p data', timeout: '1m' };
    raw.lifecycle!.run!.security = { user: 'influx:influx', capabilities: [] };
  },
};

const hashOf = (spec: ComponentSpec): string => componentHash({ recipe: recipe(spec), entry: planEntry(spec) });
const H = hashOf(base);

/** Chains `edit`s, so a case can change one more thing on top of the base's own edits. */
const andEdit = (edit: NonNullable<ComponentSpec['edit']>): Partial<ComponentSpec> => ({
  edit: (raw) => {
    base.edit!(raw);
    edit(raw);
  },
});

/** Rebuilds every object with its keys in reverse order. */
function reverseKeys<T>(v: T): T {
  if (Array.isArray(v)) return v.map(reverseKeys) as T;
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .reverse()
      .map((k) => [k, reverseKeys((v as Record<string, unknown>)[k])]),
  ) as T;
}

describe('componentHash', () => {
  it('carries its version prefix v1: and a sha256', () => {
    expect(CURRENT_HASH_VERSION).toBe(1);
    expect(H).toMatch(/^v1:[0-9a-f]{64}$/);
    expect(hashVersion(H)).toBe(1);
  });

  it('is stable: the same input twice, a deep copy, and every object with its keys in another order', () => {
    const r = recipe(base);
    const e = planEntry(base);
    expect(componentHash({ recipe: r, entry: e })).toBe(H);
    expect(componentHash(structuredClone({ recipe: r, entry: e }))).toBe(H);
    expect(componentHash({ recipe: reverseKeys(r), entry: reverseKeys(e) })).toBe(H);
    // A record's key order survives the schema, so this one reaches the hash as written.
    expect(hashOf({ ...base, env: { TZ: 'UTC', LOG_LEVEL: 'info' } })).toBe(H);
  });

  it('hashes the recipe as parsed: equal durations written differently and spelled-out defaults are no change', () => {
    expect(hashOf({ ...base, health: { ...base.health!, interval: '10000ms', timeout: '3s' } })).toBe(H);
    expect(hashOf({ ...base, ...andEdit((raw) => (raw.lifecycle!.run!.restart_policy = 'always')) })).toBe(H);
    expect(hashOf({ ...base, ...andEdit((raw) => (raw.lifecycle!.run!.security!.no_new_privileges = true)) })).toBe(H);
  });

  it.each<{ what: string; patch: Partial<ComponentSpec> }>([
    { what: 'the version', patch: { version: '2.7.6' } },
    { what: 'the recipe id', patch: { id: 'com.acme.influxdb2' } },
    { what: 'the command', patch: { command: './influxd2' } },
    { what: 'an argument', patch: { args: ['--bolt-path', 'data/other.bolt'] } },
    { what: 'the argument order', patch: { args: ['data/influxd.bolt', '--bolt-path'] } },
    { what: 'an environment value', patch: { env: { LOG_LEVEL: 'debug', TZ: 'UTC' } } },
    { what: 'an added environment variable', patch: { env: { LOG_LEVEL: 'info', TZ: 'UTC', EXTRA: '1' } } },
    { what: 'the artifact digest', patch: { artifacts: [{ ...base.artifacts![0]!, sha256: DIGEST_B }] } },
    {
      what: 'the artifact uri',
      patch: { artifacts: [{ ...base.artifacts![0]!, uri: 'https://mirror.acme.com/influxdb.tar.gz' }] },
    },
    { what: 'unpacking', patch: { artifacts: [{ ...base.artifacts![0]!, unpack: false }] } },
    {
      what: 'an added artifact',
      patch: { artifacts: [...base.artifacts!, { uri: 'https://a.acme.com/x', sha256: DIGEST_B }] },
    },
    { what: 'the health check', patch: { health: { ...base.health!, check: 'tcp://127.0.0.1:8086' } } },
    { what: 'the health interval', patch: { health: { ...base.health!, interval: '5s' } } },
    { what: 'the health failure threshold', patch: { health: { ...base.health!, failure_threshold: 7 } } },
    { what: 'removing the health check', patch: { health: undefined } },
    { what: 'the component name in the plan', patch: { name: 'influxdb-b' } },
    { what: 'the run user', patch: andEdit((raw) => (raw.lifecycle!.run!.security!.user = 'root')) },
    {
      what: 'the capabilities',
      patch: andEdit((raw) => (raw.lifecycle!.run!.security!.capabilities = ['CAP_NET_BIND_SERVICE'])),
    },
    { what: 'the restart policy', patch: andEdit((raw) => (raw.lifecycle!.run!.restart_policy = 'on-failure')) },
    { what: 'the install script', patch: andEdit((raw) => (raw.lifecycle!.install!.script = 'mkdir -p data wal')) },
  ])('changes with $what', ({ patch }) => {
    expect(hashOf({ ...base, ...patch })).not.toBe(H);
  });

  it.each<{ what: string; patch: Partial<ComponentSpec> }>([
    { what: 'the description', patch: { description: 'Another description entirely' } },
    { what: 'no description', patch: { description: undefined } },
    {
      what: 'the dependencies',
      patch: { deps: [{ on: 'com.acme.other', type: 'ordering', version: '>=1.0.0' }, { on: 'com.acme.more' }] },
    },
    { what: 'no dependencies', patch: { deps: [] } },
    { what: "the recipe's path", patch: { recipePath: 'recipes/database/influxdb-2.7.5.toml' } },
  ])('does not change with $what', ({ patch }) => {
    expect(hashOf({ ...base, ...patch })).toBe(H);
  });

  it('does not change when a container changes its description or dependencies either', () => {
    const web: ComponentSpec = { name: 'web', image: 'docker.io/library/nginx:1.27-alpine', env: { A: '1' } };
    const h = hashOf(web);
    expect(hashOf({ ...web, description: 'front end', deps: [{ on: 'com.acme.api' }] })).toBe(h);
    expect(hashOf({ ...web, image: 'docker.io/library/nginx:1.28-alpine' })).not.toBe(h);
    expect(hashOf({ ...web, env: { A: '2' } })).not.toBe(h);
  });

  it('refuses a hash version it does not know', () => {
    expect(() => componentHash({ recipe: recipe(base), entry: planEntry(base) }, 999)).toThrow(
      /unknown component hash version 999/,
    );
  });
});

describe('hashVersion and sameIdentity', () => {
  it.each<[string, number]>([
    ['v1:abc', 1],
    ['v12:abc', 12],
    ['v999:' + '0'.repeat(64), 999],
  ])('reads the version of %s', (hash, version) => {
    expect(hashVersion(hash)).toBe(version);
  });

  it.each(['', 'abc', '1:abc', 'v:abc', 'V1:abc', 'sha256:abc'])(
    'is NaN for %j, which is no component hash',
    (hash) => {
      expect(hashVersion(hash)).toBeNaN();
    },
  );

  it('matches the hash of the same component, and no other', () => {
    const input = { recipe: recipe(base), entry: planEntry(base) };
    expect(sameIdentity(input, H)).toBe(true);
    expect(sameIdentity(input, hashOf({ ...base, version: '2.7.6' }))).toBe(false);
    expect(sameIdentity(input, `v999:${H.slice(3)}`)).toBe(false);
    expect(sameIdentity(input, H.slice(3))).toBe(false);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every level and leaves array order alone', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, 1], c: null } })).toBe('{"a":{"c":null,"d":[3,1]},"b":1}');
  });

  it('treats an undefined property as absent, so optional fields left unset do not move the hash', () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe(canonicalJson({ a: 1 }));
  });

  it('tells strings, numbers and booleans apart', () => {
    const values = ['1', 1, true, 'true', null, 'null'];
    expect(new Set(values.map((v) => canonicalJson({ v }))).size).toBe(values.length);
  });

  it('lets no key or value text forge structure', () => {
    expect(canonicalJson({ 'a":1,"b': 2 })).not.toBe(canonicalJson({ a: 1, b: 2 }));
    expect(canonicalJson({ a: '1","b":"2' })).not.toBe(canonicalJson({ a: '1', b: '2' }));
  });
});
