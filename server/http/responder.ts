/**
 * Every JSON answer goes out through a server's Responder, written to Node's response
 * directly: the body as text with its media type and length set, and Koa told to stand
 * aside (`ctx.respond = false`, its documented way out), since Koa's own response handling
 * (the body setter's type and length logic, then `respond`) is a noticeable share of a
 * small request.
 *
 * Answers are written in batches, once per turn of the event loop. One made while Node is
 * still reading this turn's requests (its poll phase) waits until that reading is done;
 * then the turn's answers are written back to back (the check phase, by setImmediate).
 * Each socket write that finds the client's thread asleep wakes it, and on loopback the
 * writer pays for that wake-up: back to back, the first write wakes the client and the
 * others find it awake (figures in bench/README.md). An answer made after the batch went
 * out (a create answered after its group commit, itself in the check phase) is written at
 * once: it is part of a batch already.
 */
import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';

export const JSON_TYPE = 'application/json; charset=utf-8';

export class Responder {
  /** Answers waiting for the end of this turn's reading, as response, body, response, body… */
  private batch: (ServerResponse | string)[] = [];
  /** Whether a request arrived since the last batch went out, so a batch is scheduled. */
  private reading = false;
  private readonly writeBatch = () => {
    this.reading = false;
    const answers = this.batch;
    this.batch = [];
    for (let i = 0; i < answers.length; i += 2) (answers[i] as ServerResponse).end(answers[i + 1] as string);
  };

  /** Called as each request arrives (Node parses requests in the poll phase). */
  arrived(): void {
    if (this.reading) return;
    this.reading = true;
    setImmediate(this.writeBatch);
  }

  json(ctx: Context, status: number, text: string, headers?: Readonly<Record<string, string>>): void {
    const res = ctx.res;
    res.statusCode = status;
    if (headers) for (const name in headers) res.setHeader(name, headers[name]!);
    res.setHeader('content-type', JSON_TYPE);
    res.setHeader('cache-control', 'no-store');
    res.setHeader('content-length', Buffer.byteLength(text));
    ctx.respond = false;
    // Node leaves the body out of an answer to HEAD, and keeps its length.
    if (this.reading) this.batch.push(res, text);
    else res.end(text);
  }
}
