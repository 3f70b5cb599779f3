// Whether supervisord and PM2 are there, installing them when missing (supervisord with apt-get as root, PM2 with npm
// into bench/.cache, never into package.json).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { cacheDir, isRoot, pm2Bin } from './options.js';

export type Availability = { ok: true; installed?: boolean } | { ok: false; why: string };

function haveCommand(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0;
}

export function ensureSupervisord(): Availability {
  if (haveCommand('supervisord')) return { ok: true };
  if (!isRoot)
    return { ok: false, why: 'supervisord is not installed and the bench is not root (apt-get install supervisor)' };
  process.stderr.write('installing supervisor (apt-get install -y supervisor)… ');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let r = spawnSync('apt-get', ['install', '-y', '-qq', 'supervisor'], { env, encoding: 'utf8' });
  if (r.status !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { env, encoding: 'utf8' });
    r = spawnSync('apt-get', ['install', '-y', '-qq', 'supervisor'], { env, encoding: 'utf8' });
  }
  process.stderr.write(r.status === 0 ? 'done\n' : 'failed\n');
  return haveCommand('supervisord')
    ? { ok: true, installed: true }
    : { ok: false, why: `apt-get install supervisor failed: ${(r.stderr || '').trim().slice(-300)}` };
}

export function ensurePm2(): Availability {
  if (existsSync(pm2Bin)) return { ok: true };
  process.stderr.write(`installing pm2@5 into ${cacheDir} (npm install --no-save)… `);
  mkdirSync(cacheDir, { recursive: true });
  const r = spawnSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', cacheDir, 'pm2@5'], {
    encoding: 'utf8',
  });
  process.stderr.write(r.status === 0 ? 'done\n' : 'failed\n');
  return existsSync(pm2Bin)
    ? { ok: true, installed: true }
    : { ok: false, why: `npm install pm2@5 failed: ${(r.stderr || '').trim().slice(-300)}` };
}
