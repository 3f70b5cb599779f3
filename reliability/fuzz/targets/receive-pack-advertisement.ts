// The receive-pack ref advertisement a Git host serves (src/report/receive-pack-push.ts receivePackRefs, its pkt-line
// reader included), read over real HTTP from a loopback server that answers the fuzz input. Seed captured from
// `git http-backend`.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StatusDeliveryError } from '../../../src/report/commit-status.js';
import { receivePackRefs } from '../../../src/report/receive-pack-push.js';
import { holds, refusedWith, type FuzzTarget } from '../fuzz-target.js';
import { refLines } from '../pkt-line.js';

let server: Server | undefined;
let url = '';
let body: Uint8Array = new Uint8Array();

async function setup(): Promise<void> {
  server = createServer((_req, res) => {
    res.writeHead(200, {
      'content-type': 'application/x-git-receive-pack-advertisement',
      'content-length': body.length,
    });
    res.end(body);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fleet.git`;
}

export const receivePackAdvertisement: FuzzTarget = {
  name: 'receive-pack-advertisement',
  parses: 'receivePackRefs (src/report/receive-pack-push.ts): info/refs?service=git-receive-pack over HTTP',
  maxBytes: 8 * 1024,
  testRuns: 500,
  dictionary: [
    '0000',
    '# service=git-receive-pack\n',
    'ERR ',
    ' capabilities^{}\u0000',
    ' refs/heads/main',
    'report-status',
  ],
  structured: refLines,
  setup,
  async teardown() {
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  },
  async check(input) {
    if (!server) await setup(); // a replay without setup
    body = input;
    let refs;
    try {
      refs = await receivePackRefs({ url });
    } catch (e) {
      return refusedWith(
        e,
        (x) =>
          x instanceof StatusDeliveryError && (x.code === 'KS_STATUS_SERVER_ERROR' || x.code === 'KS_STATUS_REJECTED'),
      );
    }
    for (const [ref, oid] of refs) {
      holds(/^[0-9a-f]{40}$/.test(oid), `oid ${oid}`);
      holds(ref.length > 0 && !/[\0 ]/.test(ref), `ref ${JSON.stringify(ref)}`);
    }
    return 'accepted';
  },
};
