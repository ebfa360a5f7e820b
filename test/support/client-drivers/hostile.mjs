// A driver of the project's SDK, as a command, broken on purpose in the way its first
// argument names: what a CI team's driver sometimes is. Each way must leave the client mode
// with no verdict it has not seen, no secret in a report and bounded memory.
//
//   crash-over-1000  ends when asked to create a payment of more than 1000
//   exit             ends at once
//   garbage          answers every operation with a line that is not JSON
//   unsupported      offers no operation
//   secrets          answers with every secret it knows, long, where reports cut texts
//   big-bodies       sends its first six creates with 50 MB bodies
//   many             sends $MANY reads of a session (57,000 by default) for each read asked
//   big-line         writes a 50 MB line for its first outcome
//   strays           also sends requests to the service's port outside PAYMENT_BASE_URL
//   env              writes the names of the variables it got to $SIDE_FILE
//   daemon           starts a process in a session of its own, its pid written to $SIDE_FILE
import { spawn } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createInterface } from 'node:readline';
import sdk from '@payment-service/conformance/drivers/sdk';

const mode = process.argv[2];
const env = process.env;
const base = env.PAYMENT_BASE_URL;
const driver = await sdk(env);
const write = (outcome) => process.stdout.write(`${JSON.stringify(outcome)}\n`);

if (mode === 'exit') process.exit(0);
if (mode === 'env') writeFileSync(env.SIDE_FILE, Object.keys(env).sort().join('\n'));
if (mode === 'daemon') {
  const child = spawn('setsid', ['sleep', '600'], { detached: true, stdio: 'ignore' });
  child.unref();
  appendFileSync(env.SIDE_FILE, `${child.pid}\n`);
}

let creates = 0;
let token;
async function accessToken() {
  const answer = await fetch(`${base}/api/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ clientId: env.PAYMENT_CLIENT_ID, clientSecret: env.PAYMENT_CLIENT_SECRET }),
  });
  return (await answer.json()).accessToken;
}

let asked = 0;
for await (const line of createInterface({ input: process.stdin })) {
  const operation = JSON.parse(line);
  asked += 1;
  if (mode === 'crash-over-1000' && operation.op === 'createSession' && operation.body.amount.total > 1000)
    process.exit(3);
  if (mode === 'garbage') {
    process.stdout.write('hello\n');
    continue;
  }
  if (mode === 'unsupported') {
    write({ id: operation.id, unsupported: true });
    continue;
  }
  if (mode === 'big-line' && asked === 1) {
    process.stdout.write(`{"id": ${operation.id}, "ok": true, "value": "${'x'.repeat(50 * 1024 * 1024)}"}\n`);
    continue;
  }
  if (mode === 'big-bodies' && operation.op === 'createSession' && creates++ < 6) {
    token ??= await accessToken();
    const body = JSON.stringify({ ...operation.body, description: 'x'.repeat(50 * 1024 * 1024) });
    // Each on a connection of its own: a kept-alive one the service has just closed would lose
    // the request before it arrives, and the service refuses the body by closing this one.
    const status = await new Promise((resolve) => {
      const request = http.request(`${base}/api/checkout-sessions`, {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      });
      request.on('response', (response) => {
        response.resume();
        resolve(response.statusCode);
      });
      request.on('error', () => resolve(null));
      request.end(body);
    });
    write({ id: operation.id, ok: false, error: { code: null, status, retryable: false } });
    continue;
  }
  if (mode === 'many' && operation.op === 'readSession') {
    token ??= await accessToken();
    const reads = Number(env.MANY ?? 57_000);
    for (let i = 0; i < reads; i += 100)
      await Promise.all(
        Array.from({ length: Math.min(100, reads - i) }, () =>
          fetch(`${base}/api/checkout-sessions/${operation.sessionId}`, {
            headers: { authorization: `Bearer ${token}` },
          })
            .then((r) => r.arrayBuffer())
            .catch(() => undefined),
        ),
      );
  }
  if (mode === 'strays') {
    const elsewhere = new URL(base).origin;
    await Promise.all(
      ['/api/token', '/api/checkout-sessions', '/'].map((path) =>
        fetch(`${elsewhere}${path}`, { method: 'POST', body: 'clientId=x&clientSecret=y' }).catch(() => undefined),
      ),
    );
  }
  if (mode === 'secrets') {
    token ??= await accessToken();
    const secrets = [env.PAYMENT_CLIENT_SECRET, env.PAYMENT_WEBHOOK_SECRET, token];
    appendFileSync(env.SIDE_FILE, `${secrets.join('\n')}\n`);
    // Past the first 200 or 300 characters, where a report would cut an excerpt.
    const long = `${'x'.repeat(180)} ${secrets.join(' ')} ${'y'.repeat(100)}`;
    process.stderr.write(`${'z'.repeat(5000)}\n${long}\n`);
    if (asked === 3) {
      process.stdout.write(`${long}\n`);
      continue;
    }
    write(
      asked % 2 === 0
        ? { id: operation.id, ok: true, value: { pad: 'x'.repeat(250), accessToken: token, note: long } }
        : { id: operation.id, ok: false, error: { code: long, status: 400, retryable: false, message: long } },
    );
    continue;
  }
  write({ id: operation.id, ...(await driver.handle(operation)) });
}
