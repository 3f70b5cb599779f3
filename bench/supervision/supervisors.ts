// The supervisors of the supervision bench, each over the same programs: the Keystone agent (with or without a tcp://
// check), supervisord and PM2, behind one interface (start, the programs' stdout logs, settled, stop).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir, projectDir } from '../lib/paths.js';
import { writeProcessRepo } from '../lib/process-repo.js';
import { cleanEnv, cmdlineOf, isLive, signalGroup, signalPid } from '../lib/processes.js';
import { readTextIfAny } from '../lib/stand-in.js';
import { startAgent, type Agent } from '../lib/start-agent.js';
import { sleep } from '../lib/stats.js';
import { cacheDir, isRoot, N, names, pm2Bin, PORT_BASE, ports } from './options.js';

/** One supervisor under test. */
export interface Supervisor {
  key: string;
  label: string;
  /** Its own delay before a first restart. */
  restartDelayMs: number;
  version: string | undefined;
  /** Whether its programs are killed (the probed agent's are not). */
  kills: boolean;
  /** Starts it over the programs: its pid. */
  start(): Promise<number>;
  stdoutLog(name: string): string;
  restartLog?(name: string, newPid: number): { exitedAt: number | undefined; startingAt: number | undefined };
  settled?(name: string, newPid: number): Promise<void>;
  /** Stops it: the pids to look after for stragglers. */
  stop(): Promise<number[]>;
}

export function keystone(work: string, standIn: string, { probed }: { probed: boolean }): Supervisor {
  const dir = join(work, probed ? 'keystone-probed' : 'keystone');
  const repo = join(dir, 'repo');
  const stateDir = join(dir, 'state');
  const plan = writeProcessRepo(
    repo,
    names.map((name, i) => ({
      name,
      port: ports[i]!,
      delay: 0,
      ...(probed && { check: 'tcp' as const, interval: '10s', timeout: '1s', threshold: 3 }),
      dependencies: [],
    })),
    standIn,
  );
  let agent!: Agent;
  return {
    key: probed ? 'keystone-probed' : 'keystone',
    label: probed ? 'keystone, tcp check /10 s' : 'keystone',
    /** The restart policy's delay before a first restart (FIRST_RESTART_MS of SPEC §5). */
    restartDelayMs: 100,
    version: JSON.parse(readFileSync(join(projectDir, 'package.json'), 'utf8')).version,
    kills: !probed,
    async start() {
      // The API on a port of the bench's own range (with its /metrics, as on a device): 8080 may be taken on a shared machine.
      agent = startAgent({
        repo,
        plan,
        stateDir,
        concurrency: 64,
        env: cleanEnv(),
        extraArgs: ['--listen', `127.0.0.1:${PORT_BASE + N + (probed ? 2 : 1)}`],
      });
      await agent.waitFor(
        (e) => e.msg === 'all components running' || e.msg?.startsWith('apply failed'),
        120_000,
        '"all components running"',
      );
      if (!agent.events.some((e) => e.msg === 'all components running'))
        throw new Error('the agent did not bring every program up');
      return agent.pid;
    },
    stdoutLog: (name: string) => join(stateDir, 'components', name, 'logs', 'stdout.log'),
    /** The agent's view of one restart: when it logged the exit, and the new instance's `starting`. */
    restartLog(name: string, newPid: number) {
      const exited = agent.events.filter((e) => e.component === name && e.msg === 'exited').at(-1);
      const starting = agent.events.find((e) => e.component === name && e.state === 'starting' && e.pid === newPid);
      return { exitedAt: exited?.t, startingAt: starting?.t };
    },
    /** Until the agent has the new instance running again (its engine queue is free for the next restart). */
    async settled(name: string, newPid: number) {
      const i = agent.events.findIndex((e) => e.component === name && e.state === 'starting' && e.pid === newPid);
      await agent
        .waitFor(
          (e) => i >= 0 && agent.events.indexOf(e) > i && e.component === name && e.state === 'running',
          10_000,
          `${name} running again`,
        )
        .catch(() => {});
    },
    async stop() {
      await agent.stop();
      return [agent.pid, ...agent.componentPids()];
    },
  };
}

export function supervisord(work: string, standIn: string): Supervisor {
  const dir = ensureDir(join(work, 'supervisord'));
  const conf = join(dir, 'supervisord.conf');
  const lines = [
    '[supervisord]',
    'nodaemon=true',
    `logfile=${join(dir, 'supervisord.log')}`,
    `pidfile=${join(dir, 'supervisord.pid')}`,
    `childlogdir=${dir}`,
    'loglevel=info',
    ...(isRoot ? ['user=root'] : []),
  ];
  names.forEach((name, i) =>
    lines.push(
      '',
      `[program:${name}]`,
      `command=${process.execPath} ${standIn} --port ${ports[i]} --delay 0`,
      'autostart=true',
      'autorestart=true',
      'startsecs=1',
      'stopasgroup=true',
      'killasgroup=true',
      'stopwaitsecs=5',
      `stdout_logfile=${join(dir, `${name}.out`)}`,
      `stderr_logfile=${join(dir, `${name}.err`)}`,
    ),
  );
  writeFileSync(conf, lines.join('\n') + '\n');
  let child!: ChildProcess;
  let exited!: Promise<unknown>;
  return {
    key: 'supervisord',
    label: 'supervisord',
    /** No restart delay: an exit is seen in its main loop, which waits up to 1 s in select(). */
    restartDelayMs: 0,
    version: spawnSync('supervisord', ['--version'], { encoding: 'utf8' }).stdout?.trim(),
    kills: true,
    async start() {
      child = spawn('supervisord', ['-n', '-c', conf], { env: cleanEnv(), stdio: 'ignore', detached: true });
      exited = new Promise((r) => child.once('exit', r));
      child.once('error', () => {});
      await sleep(200);
      if (!isLive(child.pid!))
        throw new Error(`supervisord exited at once: ${readTextIfAny(join(dir, 'supervisord.log')).slice(-1000)}`);
      return child.pid!;
    },
    stdoutLog: (name: string) => join(dir, `${name}.out`),
    /** Until supervisord has moved the new process from STARTING to RUNNING (startsecs): a kill before that is a failed start, handled with backoff. */
    async settled(name: string) {
      const count = (re: RegExp) => (readTextIfAny(join(dir, 'supervisord.log')).match(re) ?? []).length;
      const spawned = new RegExp(`spawned: '${name}'`, 'g');
      const running = new RegExp(`success: ${name} entered RUNNING`, 'g');
      for (let k = 0; k < 200 && count(running) < count(spawned); k++) await sleep(25);
    },
    async stop() {
      signalPid(child.pid!, 'SIGTERM');
      const t = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), 30_000);
      await exited;
      clearTimeout(t);
      return [child.pid!];
    },
  };
}

export function pm2(work: string, standIn: string): Supervisor {
  const home = ensureDir(join(work, 'pm2'));
  const logs = ensureDir(join(home, 'logs'));
  const eco = join(home, 'apps.json');
  writeFileSync(
    eco,
    JSON.stringify({
      apps: names.map((name, i) => ({
        name,
        script: standIn,
        args: ['--port', String(ports[i]), '--delay', '0'],
        interpreter: process.execPath,
        exec_mode: 'fork',
        instances: 1,
        autorestart: true,
        watch: false,
        out_file: join(logs, `${name}.out`),
        error_file: join(logs, `${name}.err`),
        pid_file: join(home, `${name}.pid`),
      })),
    }),
  );
  const env = cleanEnv({ PM2_HOME: home, PM2_SILENT: 'true' });
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [pm2Bin, ...args], { env, encoding: 'utf8', timeout: 120_000 });
  let daemon: number | undefined;
  return {
    key: 'pm2',
    label: 'pm2',
    /** restart_delay, 0 by default. */
    restartDelayMs: 0,
    version: JSON.parse(readFileSync(join(cacheDir, 'node_modules', 'pm2', 'package.json'), 'utf8')).version,
    kills: true,
    async start() {
      const r = cli('start', eco);
      if (r.status !== 0)
        throw new Error(`pm2 start exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout).slice(-1500)}`);
      daemon = Number(readTextIfAny(join(home, 'pm2.pid')).trim());
      if (!daemon || !isLive(daemon)) throw new Error(`no PM2 daemon pid in ${join(home, 'pm2.pid')}`);
      return daemon;
    },
    stdoutLog: (name: string) => join(logs, `${name}.out`),
    async stop() {
      cli('kill');
      for (let k = 0; k < 100 && daemon && isLive(daemon); k++) await sleep(50);
      if (daemon && isLive(daemon) && cmdlineOf(daemon)?.includes(home)) signalPid(daemon, 'SIGKILL');
      return daemon ? [daemon] : [];
    },
  };
}
