// The webhook of the push-to-apply bench: a push event posted to the agent as GitHub would send it.
import { Buffer } from 'node:buffer';
import { createHmac, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { epochNow } from '../lib/stats.js';

/** POST /v1/webhooks/github as GitHub would send a push event; { status, sentAt, ackAt }. */
export const postWebhook = (apiPort: number, secret: string, sha: string) =>
  new Promise<{ status: number | undefined; text: string; sentAt: number; ackAt: number }>((resolve, reject) => {
    const body = JSON.stringify({ ref: 'refs/heads/main', after: sha });
    const sentAt = epochNow();
    const req = request(
      {
        host: '127.0.0.1',
        port: apiPort,
        method: 'POST',
        path: '/v1/webhooks/github',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'x-github-event': 'push',
          'x-github-delivery': randomBytes(8).toString('hex'),
          'x-hub-signature-256': 'sha256=' + createHmac('sha256', secret).update(body).digest('hex'),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode, text, sentAt, ackAt: epochNow() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
