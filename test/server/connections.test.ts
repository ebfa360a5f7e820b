/**
 * How answers reach their connections. JSON answers made while a turn's requests are read
 * wait for the end of the turn and go out together (server/http/respond.ts); pages,
 * answers after a group commit and errors take other paths. Whichever way each is written,
 * every connection must get its own answers, in the order it asked.
 *
 * @tags postgres
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionRequest, startTestServer, type Org, type TestServer } from '../support/server.ts';

let t: TestServer;
let org: Org;

beforeAll(async () => {
  t = await startTestServer();
  org = await t.organisation();
});
afterAll(() => t.close());

async function createSession(reference: string): Promise<{ id: string; reference: string }> {
  const answer = await t.request('POST', '/api/checkout-sessions', {
    token: org.testToken,
    body: sessionRequest({ creditorReference: { reference } }),
  });
  expect(answer.status).toBe(200);
  return answer.body;
}

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `requests` in one write on one connection and parses `requests.length` answers. */
function pipelined(requests: string[]): Promise<RawAnswer[]> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let received = Buffer.alloc(0);
    const answers: RawAnswer[] = [];
    socket.setTimeout(5_000, () => socket.destroy(new Error(`timed out after ${answers.length} answers`)));
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      for (;;) {
        const end = received.indexOf('\r\n\r\n');
        if (end < 0) break;
        const [statusLine, ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
        const headers = Object.fromEntries(
          lines.map((line) => [
            line.slice(0, line.indexOf(':')).toLowerCase(),
            line.slice(line.indexOf(':') + 1).trim(),
          ]),
        );
        const length = Number(headers['content-length']);
        if (!Number.isInteger(length))
          return socket.destroy(new Error(`an answer without Content-Length: ${statusLine}`));
        if (received.length < end + 4 + length) break;
        answers.push({
          status: Number(statusLine!.split(' ')[1]),
          headers,
          body: received.subarray(end + 4, end + 4 + length).toString('utf8'),
        });
        received = received.subarray(end + 4 + length);
      }
      if (answers.length === requests.length) {
        socket.end();
        resolve(answers);
      }
    });
    socket.write(requests.join(''));
  });
}

const request = (method: string, path: string, id: string, headers: Record<string, string> = {}, body = '') =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: ${id}\r\n${Object.entries({
    ...headers,
    'content-length': String(Buffer.byteLength(body)),
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n${body}`;

describe('answers and their connections', () => {
  it('answers pipelined requests on one connection in the order they were sent, whichever way each answer is written', async () => {
    const session = await createSession('PIPE-1');
    const auth = { authorization: `Bearer ${org.testToken}` };
    const answers = await pipelined([
      // a read, answered at the end of its turn
      request('GET', `/api/checkout-sessions/${session.id}`, 'r1', auth),
      // a page, written by Koa after an asynchronous store read
      request('GET', `/pay/${session.id}`, 'r2'),
      // a create, answered after its group commit
      request(
        'POST',
        '/api/checkout-sessions',
        'r3',
        { ...auth, 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
        JSON.stringify(sessionRequest({ creditorReference: { reference: 'PIPE-2' } })),
      ),
      request('GET', '/healthz', 'r4'),
      // a page's 404 and an API error in the envelope
      request('GET', '/pay/cs_nothing', 'r5'),
      request('GET', '/api/nothing', 'r6', auth),
    ]);
    expect(answers.map((a) => a.headers['x-request-id'])).toEqual(['r1', 'r2', 'r3', 'r4', 'r5', 'r6']);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 404, 404]);
    expect(JSON.parse(answers[0]!.body).id).toBe(session.id);
    expect(answers[1]!.headers['content-type']).toMatch(/^text\/html/);
    expect(JSON.parse(answers[2]!.body).reference).toBe('PIPE-2');
    expect(JSON.parse(answers[3]!.body)).toEqual({ ok: true });
    expect(answers[4]!.headers['content-type']).toMatch(/^text\/html/);
    expect(JSON.parse(answers[5]!.body).error.code).toBe('not_found');
  });

  it('gives each of 50 busy connections the answers to its own requests', async () => {
    const sessions = await Promise.all(Array.from({ length: 10 }, (_, i) => createSession(`MANY-${i}`)));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
    const get = (sessionId: string) =>
      new Promise<{ status: number; id: string }>((resolve, reject) => {
        const req = http.get(
          `${t.url}/api/checkout-sessions/${sessionId}`,
          { agent, headers: { authorization: `Bearer ${org.testToken}` } },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => resolve({ status: res.statusCode!, id: JSON.parse(text).id }));
          },
        );
        req.on('error', reject);
      });
    try {
      const asked = Array.from({ length: 500 }, (_, i) => sessions[(i * 7) % sessions.length]!.id);
      const answers = await Promise.all(asked.map(get));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      expect(answers.map((a) => a.id)).toEqual(asked);
    } finally {
      agent.destroy();
    }
  });
});
