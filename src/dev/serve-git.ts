// `npm run git-server -- DIR [--port 8418] [--token-file F]`: serves every bare repository under DIR over Git's
// smart HTTP on 127.0.0.1, pushes included, for trying Keystone's Git following on one machine. A real fleet uses
// its Git host (GitHub, Gitea, Forgejo, GitLab); this is the same protocol with nothing else around it.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { GitHttpServer } from './git-http-server.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { port: { type: 'string', default: '8418' }, 'token-file': { type: 'string' } },
});
if (positionals.length !== 1) {
  process.stderr.write('usage: npm run git-server -- DIR [--port 8418] [--token-file FILE]\n');
  process.exit(2);
}
const root = resolve(positionals[0]!);
const token = values['token-file'] === undefined ? undefined : readFileSync(values['token-file'], 'utf8').trim();
const server = new GitHttpServer({ root, ...(token !== undefined && { token }), port: Number(values.port) });
await server.start();
process.stdout.write(
  `serving the bare repositories under ${root} at http://127.0.0.1:${server.port}/<name>.git${token ? ' (token required)' : ''}; Ctrl-C stops\n`,
);
// Once stopping, a repeated signal (Ctrl-C under npm arrives twice) is ignored rather than killing the stop.
let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    void server.stop().then(() => process.exit(0));
  });
