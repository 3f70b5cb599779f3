// The walkthrough's Debian plumbing, taken from the package tests so that both do it the same way
// (test/packaging/debian-image.ts, deb-builds.ts, debian-container.ts, example-stack.ts): those TypeScript modules are
// bundled here with esbuild (a devDependency) into one file under the work directory and imported.
//
//   node examples/agent-update/debian.mjs packages WORK_DIR VERSION…
//       the Debian 12 image (debootstrap, cached in the engine) and keystone_<VERSION>_<arch>.deb for each version
//       (packaging/build-deb.mjs, cached as the tests cache them); prints {"dir","arch","files","node"} as JSON
//   node examples/agent-update/debian.mjs start WORK_DIR DEBS_DIR HOST_DIR:CONTAINER_DIR…
//       a container of that image booting systemd as PID 1, DEBS_DIR at /debs, the checkout at /src (read-only), each
//       HOST_DIR at its CONTAINER_DIR; waits for systemd to boot and prints the container's name
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const top = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The four modules as one ES module. test/support/example-repo.ts is only asked for PROJECT_ROOT (it finds it from its
 * own location, which a bundle elsewhere would not have, and imports the whole CLI besides): given here.
 */
async function packagingModules(work) {
  const out = join(work, '.packaging-modules', 'packaging.mjs');
  mkdirSync(dirname(out), { recursive: true });
  const exports = ['debian-image', 'deb-builds', 'debian-container', 'example-stack'].map((m) => `export * from './${m}.ts';`).join('\n');
  await build({
    stdin: { contents: exports, resolveDir: join(top, 'test', 'packaging'), loader: 'ts', sourcefile: 'walkthrough-packaging.ts' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: out,
    logLevel: 'error',
    plugins: [
      {
        name: 'project-root',
        setup(b) {
          b.onResolve({ filter: /\/support\/example-repo\.js$/ }, () => ({ path: 'example-repo', namespace: 'project-root' }));
          b.onLoad({ filter: /.*/, namespace: 'project-root' }, () => ({ contents: `export const PROJECT_ROOT = ${JSON.stringify(top)};`, loader: 'js' }));
        },
      },
    ],
  });
  try {
    return await import(pathToFileURL(out).href);
  } finally {
    rmSync(dirname(out), { recursive: true, force: true });
  }
}

async function main(argv) {
  const [command, work, ...rest] = argv;
  if (!work || (command !== 'packages' && command !== 'start')) {
    process.stderr.write('usage: debian.mjs packages WORK_DIR VERSION… | debian.mjs start WORK_DIR DEBS_DIR [HOST_DIR:CONTAINER_DIR…]\n');
    return 2;
  }
  const m = await packagingModules(resolve(work));
  if (command === 'packages') {
    if (rest.length === 0) throw new Error('packages: name at least one version');
    process.stderr.write(`   the Debian ${m.debianImage().suite} image (${m.debianImage().tag}): debootstrap once per machine, then cached\n`);
    await m.ensureDebianImage();
    process.stderr.write(`   keystone ${rest.join(', ')} for ${m.hostArch()}: packaging/build-deb.mjs, a minute or two each unless cached\n`);
    const debs = await m.buildDebs(rest);
    process.stdout.write(JSON.stringify(debs) + '\n');
    return 0;
  }
  const [debs, ...mounts] = rest;
  if (!debs) throw new Error('start: name the directory of packages');
  const c = await m.DebianContainer.start({ systemd: true, debs: resolve(debs), mounts: mounts.map((spec) => { const at = spec.lastIndexOf(':'); return { host: resolve(spec.slice(0, at)), container: spec.slice(at + 1) }; }) });
  // The name first, so that the caller removes the container even if systemd does not boot.
  process.stdout.write(`${c.name}\n`);
  const state = await m.systemdBooted(c, 120_000);
  process.stderr.write(`   systemd is PID 1 in ${c.name}: ${state}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`debian.mjs: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
