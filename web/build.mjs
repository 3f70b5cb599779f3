// Bundles the dashboard (web/src) into dist/web: hashed assets, their .gz and .br siblings, the HTML shell and the
// manifest the agent serves them by. Silent on success: `npm run build` runs it before every test run.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { extname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { build } from 'esbuild';

const root = join(import.meta.dirname, '..');
const out = join(root, 'dist', 'web');
const assets = join(out, 'assets');
const entry = 'web/src/main.tsx';

const TYPES = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

const gz = promisify(gzip);
const br = promisify(brotliCompress);

/** `dist/web/assets/main-AB12.js` → `/assets/main-AB12.js` */
const urlOf = (path) => `/${relative(out, join(root, path)).split('\\').join('/')}`;

// A small keystone as a public asset, so that the browser does not ask the agent for /favicon.ico (a 401 in its log).
const ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M3 1h10l3 14H0z" fill="#0a58b5"/></svg>\n';

function shell({ script, css, preload, icon }) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>Keystone</title>
<link rel="icon" href="${icon}" type="image/svg+xml">
${css.map((href) => `<link rel="stylesheet" href="${href}">`).join('\n')}
${preload.map((href) => `<link rel="modulepreload" href="${href}">`).join('\n')}
<script type="module" src="${script}"></script>
</head>
<body>
<div id="app"></div>
<noscript><p>The Keystone dashboard needs JavaScript. Without it, <code>keystonectl status</code> on the device shows the same.</p></noscript>
</body>
</html>
`;
}

async function main() {
  await rm(out, { recursive: true, force: true });
  await mkdir(assets, { recursive: true });

  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    outdir: assets,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    // <dialog> and its showModal need Safari 15.4 anyway; older engines get the login form at best.
    target: ['es2020', 'chrome90', 'firefox90', 'safari15'],
    minify: true,
    charset: 'utf8',
    legalComments: 'none',
    entryNames: '[name]-[hash]',
    chunkNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    tsconfig: 'web/tsconfig.json',
    metafile: true,
    write: true,
    logLevel: 'silent',
  });

  const outputs = result.metafile.outputs;
  const [entryOut, entryMeta] = Object.entries(outputs).find(([, o]) => o.entryPoint === entry) ?? [];
  if (!entryOut) throw new Error(`esbuild produced no output for ${entry}`);

  // Public: what the login form needs before a session exists (the entry, what it imports statically, its CSS).
  const staticImports = new Set();
  const walk = (path) => {
    for (const imp of outputs[path]?.imports ?? []) {
      if (imp.kind !== 'import-statement' || imp.external || staticImports.has(imp.path)) continue;
      staticImports.add(imp.path);
      walk(imp.path);
    }
  };
  walk(entryOut);
  const css = entryMeta.cssBundle ? [entryMeta.cssBundle] : [];
  const publicUrls = ['/', urlOf(entryOut), ...css.map(urlOf), ...[...staticImports].map(urlOf)];

  const iconPath = `dist/web/assets/icon-${createHash('sha256').update(ICON).digest('hex').slice(0, 8).toUpperCase()}.svg`;
  await writeFile(join(root, iconPath), ICON);
  publicUrls.push(urlOf(iconPath));

  const files = {};
  const emitted = [...Object.keys(outputs).filter((p) => !p.endsWith('.map')), iconPath];
  for (const path of emitted) {
    const type = TYPES[extname(path)];
    if (!type) throw new Error(`no content type known for ${path}`);
    files[urlOf(path)] = { type };
  }

  const html = shell({
    script: urlOf(entryOut),
    css: css.map(urlOf),
    preload: [...staticImports].map(urlOf),
    icon: urlOf(iconPath),
  });
  const manifest = { public: publicUrls, files };

  await Promise.all([
    writeFile(join(out, 'index.html'), html),
    writeFile(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`),
    ...emitted.map(async (path) => {
      const abs = join(root, path);
      const body = await readFile(abs);
      const [g, b] = await Promise.all([
        gz(body, { level: 9 }),
        br(body, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: 11,
            [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
            [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
          },
        }),
      ]);
      // A sibling no smaller than the file itself (a tiny icon) would only cost bytes: the agent sends the file.
      await Promise.all([
        g.length < body.length && writeFile(`${abs}.gz`, g),
        b.length < body.length && writeFile(`${abs}.br`, b),
      ]);
    }),
  ]);
}

main().catch((e) => {
  // esbuild's errors carry their locations; print them as esbuild would.
  if (Array.isArray(e?.errors) && e.errors.length) {
    for (const m of e.errors) {
      const at = m.location ? `${m.location.file}:${m.location.line}:${m.location.column}: ` : '';
      console.error(`web/build.mjs: ${at}${m.text}`);
    }
  } else console.error(`web/build.mjs: ${e?.stack ?? e}`);
  process.exit(1);
});
