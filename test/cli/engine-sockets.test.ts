// `--docker-socket PATH`, `--podman-socket PATH`, their configuration keys and DOCKER_HOST (SPEC §18): where the agent
// looks for each engine, and the refusals (exit 2, a stable code, nothing started) of a socket that is not there and of
// a DOCKER_HOST the agent does not speak. The real `keystone` entry point in-process; real unix sockets in a temp dir.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAgentFlags } from '../../src/cli/agent-flags.js';
import { agentSettings } from '../../src/cli/agent-settings.js';
import { parseAgentOptions } from '../../src/cli/agent-options.js';
import { engineSocketsFrom } from '../../src/cli/engine-args.js';
import { connectEngine } from '../../src/runtime/container-engine.js';
import { main } from '../../src/cli/keystone.js';
import { hostPolicyFacts } from '../../src/runtime/policy-host.js';

let root: string;
let repoDir: string;
let dockerSock: string;
let podmanSock: string;
/** Engines that answer a ping (an HTTP server on a unix socket): two "Docker" sockets and a "Podman" one. */
let fakeDocker: string;
let otherDocker: string;
let fakePodman: string;
const servers: Array<{ close(cb: () => void): unknown }> = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-engine-sockets-'));
  repoDir = join(root, 'repo');
  mkdirSync(repoDir);
  dockerSock = join(root, 'docker.sock');
  podmanSock = join(root, 'podman.sock');
  // Sockets that hang up on whoever connects: there, but no engine answers on them.
  for (const path of [dockerSock, podmanSock]) {
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(path, resolve));
    servers.push(server);
  }
  writeFileSync(join(root, 'plain-file'), 'not a socket\n');
  fakeDocker = join(root, 'fake-docker.sock');
  otherDocker = join(root, 'other-docker.sock');
  fakePodman = join(root, 'fake-podman.sock');
  for (const path of [fakeDocker, otherDocker, fakePodman]) {
    const server = createHttpServer((req, res) => {
      res.writeHead(req.url?.endsWith('/_ping') ? 200 : 404, { 'content-type': 'text/plain' });
      res.end(req.url?.endsWith('/_ping') ? 'OK' : 'not here');
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    servers.push({ close: (cb) => (server.closeAllConnections(), server.close(cb)) });
  }
});
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  rmSync(root, { recursive: true, force: true });
});

async function keystone(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    cwd: root,
    env,
  };
  const code = await main(args, io, { once: () => {} });
  return { code, stdout, stderr };
}

/** The agent's start with a development source: anything after the flags' checks would need a state directory. */
const agent = (more: string[], env?: Record<string, string>) =>
  keystone(
    [
      'agent',
      '--dir',
      repoDir,
      '--allow-unsigned',
      '--listen',
      'none',
      '--state-dir',
      join(root, 'never-made'),
      ...more,
    ],
    env,
  );

describe('the agent refuses an engine it cannot reach the way it was told (exit 2, nothing started)', () => {
  const cases: Array<{ what: string; args: string[]; env?: Record<string, string>; code: string; says: string }> = [
    {
      what: '--docker-socket that does not exist',
      args: ['--docker-socket', '/nonexistent/docker.sock'],
      code: 'KS_ENGINE_SOCKET_MISSING',
      says: '--docker-socket /nonexistent/docker.sock does not exist',
    },
    {
      what: '--podman-socket that does not exist',
      args: ['--podman-socket', '/nonexistent/podman.sock'],
      code: 'KS_ENGINE_SOCKET_MISSING',
      says: 'systemctl enable --now podman.socket',
    },
    {
      what: '--podman-socket naming a plain file',
      args: ['--podman-socket', 'plain-file'],
      code: 'KS_ENGINE_SOCKET_MISSING',
      says: 'plain-file is not a socket',
    },
    {
      what: '--docker-socket given a tcp:// URL',
      args: ['--docker-socket', 'tcp://10.0.0.2:2375'],
      code: 'KS_ENGINE_SOCKET_INVALID',
      says: "a local socket's path",
    },
    {
      what: 'DOCKER_HOST=tcp://',
      args: [],
      env: { DOCKER_HOST: 'tcp://10.0.0.2:2375' },
      code: 'KS_DOCKER_HOST_UNSUPPORTED',
      says: 'DOCKER_HOST=tcp://10.0.0.2:2375: the agent reaches Docker through a local unix socket only',
    },
    {
      what: 'DOCKER_HOST=ssh://',
      args: [],
      env: { DOCKER_HOST: 'ssh://me@box' },
      code: 'KS_DOCKER_HOST_UNSUPPORTED',
      says: 'unset DOCKER_HOST, or give --docker-socket PATH',
    },
    {
      what: 'DOCKER_HOST naming a socket that does not exist',
      args: [],
      env: { DOCKER_HOST: 'unix:///nonexistent/docker.sock' },
      code: 'KS_ENGINE_SOCKET_MISSING',
      says: '/nonexistent/docker.sock does not exist',
    },
  ];
  for (const c of cases) {
    it(c.what, async () => {
      const r = await agent(c.args, c.env);
      expect(r.code, r.stderr).toBe(2);
      const first = r.stderr.split('\n')[0]!;
      expect(first).toContain(`[${c.code}]`);
      expect(first).toContain(c.says);
      expect(r.stderr).toContain('usage: keystone agent');
      expect(r.stdout).toBe('');
    });
  }

  it('a configuration key naming a socket that is not there: the file, the key and the line', async () => {
    const file = join(root, 'agent.toml');
    writeFileSync(
      file,
      `dir = ${JSON.stringify(repoDir)}\nallow-unsigned = true\nlisten = "none"\npodman-socket = "/nonexistent/podman.sock"\ndocker-socket = "tcp://10.0.0.2:2375"\n`,
      { mode: 0o600 },
    );
    const r = await keystone(['agent', '--config', file]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`${file}:4: podman-socket: /nonexistent/podman.sock does not exist`);
    expect(r.stderr).toMatch(/:4: podman-socket: .*\[KS_ENGINE_SOCKET_MISSING\]/);
    expect(r.stderr).toMatch(
      /:5: docker-socket: "tcp:\/\/10\.0\.0\.2:2375" is not an absolute path to a local socket.*\[KS_ENGINE_SOCKET_INVALID\]/,
    );
  });

  it('doctor refuses the same flags the same way', async () => {
    const r = await keystone([
      'doctor',
      '--dir',
      repoDir,
      '--allow-unsigned',
      '--podman-socket',
      '/nonexistent/podman.sock',
    ]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('[KS_ENGINE_SOCKET_MISSING]');
  });
});

describe('where each engine is looked for', () => {
  it('--docker-socket and --podman-socket (relative to the working directory, or unix://PATH) replace the defaults', () => {
    expect(
      engineSocketsFrom({ 'docker-socket': 'docker.sock', 'podman-socket': `unix://${podmanSock}` }, {}, root),
    ).toEqual({ docker: [dockerSock], podman: [podmanSock] });
    expect(engineSocketsFrom({}, {}, root)).toEqual({});
  });

  it("DOCKER_HOST=unix:// is Docker's socket; an empty one is no choice; --docker-socket wins over any DOCKER_HOST, a tcp:// one too", () => {
    expect(engineSocketsFrom({}, { DOCKER_HOST: `unix://${dockerSock}` }, root)).toEqual({ docker: [dockerSock] });
    expect(engineSocketsFrom({}, { DOCKER_HOST: '' }, root)).toEqual({});
    expect(engineSocketsFrom({ 'docker-socket': dockerSock }, { DOCKER_HOST: 'tcp://10.0.0.2:2375' }, root)).toEqual({
      docker: [dockerSock],
    });
  });

  it('a socket the agent was pointed at is guarded like the default ones: no container may mount it without --allow-privileged', () => {
    const host = hostPolicyFacts({ sockets: { podman: [podmanSock], docker: [dockerSock] }, env: {} });
    expect(host.guarded).toEqual(
      expect.arrayContaining([podmanSock, dockerSock, '/run/podman/podman.sock', '/var/run/docker.sock']),
    );
  });

  /** What the agent's container runtime connects to for `choice`, given these flags and this environment. */
  const connectedWith = async (
    choice: 'auto' | 'docker' | 'podman',
    args: string[],
    env: Record<string, string> = {},
  ) => {
    const io = { stdout: { write: () => true }, stderr: { write: () => true }, cwd: root, env };
    const argv = ['--dir', repoDir, '--allow-unsigned', '--listen', 'none', ...args];
    const { run } = agentSettings(checkAgentFlags(argv, parseAgentOptions(argv, io), io), io);
    const engine = await connectEngine(choice, { env, ...(run.engineSockets && { socketPaths: run.engineSockets }) });
    return `${engine.kind} ${engine.endpoint.label}`;
  };

  it('DOCKER_HOST=unix:// is honoured: the engine on that socket is the one used', async () => {
    expect(await connectedWith('docker', [], { DOCKER_HOST: `unix://${fakeDocker}` })).toBe(`docker ${fakeDocker}`);
    // --docker-socket wins over DOCKER_HOST.
    expect(
      await connectedWith('docker', ['--docker-socket', otherDocker], { DOCKER_HOST: `unix://${fakeDocker}` }),
    ).toBe(`docker ${otherDocker}`);
  });

  it('runtime = "podman" takes --podman-socket; "auto" takes Docker\'s when both answer, Podman\'s when Docker\'s does not', async () => {
    expect(await connectedWith('podman', ['--podman-socket', fakePodman, '--docker-socket', fakeDocker])).toBe(
      `podman ${fakePodman}`,
    );
    expect(await connectedWith('auto', ['--podman-socket', fakePodman, '--docker-socket', fakeDocker])).toBe(
      `docker ${fakeDocker}`,
    );
    // dockerSock hangs up: no engine answers there, so auto goes on to Podman.
    expect(await connectedWith('auto', ['--podman-socket', fakePodman, '--docker-socket', dockerSock])).toBe(
      `podman ${fakePodman}`,
    );
  });
});
