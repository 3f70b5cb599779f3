// `--timeout` holds for the whole answer, body included: an agent that sends the first progress line of an apply and
// then nothing (or answers a read with headers and no body) is given up on at the timeout, with KS_AGENT_UNREACHABLE.
// (AbortSignal.timeout()'s signal could be collected while a body was read, and the wait then ran on: issue 27.)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from '../../src/cli/agent-client.js';

let server: Server;
let client: AgentClient;

beforeAll(async () => {
  server = createServer((req, res) => {
    // One line, then silence: the connection stays open, as an agent that hangs mid-apply would leave it.
    if (req.url?.startsWith('/v1/apply')) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write('{"event":"accepted"}\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"partial":');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = new AgentClient(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), () => ({
    token: 't',
  }));
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('the agent client gives up at its timeout, body included', () => {
  it('a progress stream that stops: the first line arrives, then the timeout ends the wait', async () => {
    const lines: unknown[] = [];
    const read = (async () => {
      for await (const l of client.postStream('/v1/apply', {}, { timeoutMs: 400 })) lines.push(l);
    })();
    await expect(read).rejects.toMatchObject({
      code: 'KS_AGENT_UNREACHABLE',
      message: expect.stringContaining('did not answer within'),
    });
    // The server never closes the connection: only the timeout can end the wait.
    expect(lines).toEqual([{ event: 'accepted' }]);
  });

  it('a read whose body never ends', async () => {
    await expect(client.get('/v1/revision', { timeoutMs: 400 })).rejects.toMatchObject({
      code: 'KS_AGENT_UNREACHABLE',
      message: expect.stringContaining('did not answer within'),
    });
  });
});
