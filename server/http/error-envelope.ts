/**
 * Answers every error with the envelope and `doc_url` = `{docs_url}/errors/#<code>`
 * (`POST /api/token`: with its `{ error: <string> }`). Anything unexpected is logged
 * (with its stack, in the log only) and answered as 500 `internal_error`: no stack
 * trace, SQL or secret ever reaches a response body. A client gone before its body
 * ended gets no answer and no error in the log: its request is logged with status 499.
 */
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { answerFor, errorJson, internalError, isTokenRequest } from './errors.ts';
import { ClientGone } from './raw-body.ts';
import { requestIdOf } from './request-log.ts';
import type { Responder } from './responder.ts';

export function errorEnvelope(docsUrl: string, log: Logger, responder: Responder): Middleware {
  return async function answerErrors(ctx, next) {
    try {
      await next();
    } catch (caught) {
      if (caught instanceof ClientGone) {
        // No answer: its request is logged 499 as its connection closes (request-log.ts).
        ctx.respond = false;
        return;
      }
      // The responder sets `ctx.respond = false` as it makes the answer, which may wait for
      // the end of the turn before it is written (see responder.ts).
      if (ctx.res.headersSent || ctx.respond === false) {
        // The answer is made already: all that is left is to say so in the log.
        log.error({ reqId: requestIdOf(ctx.res), err: caught }, 'error after the answer was sent');
        return;
      }
      let error = answerFor(caught);
      if (!error) {
        log.error({ reqId: requestIdOf(ctx.res), err: caught }, 'unexpected error');
        error = internalError();
      }
      responder.json(ctx, error.status, errorJson(error, docsUrl, isTokenRequest(ctx.method, ctx.path)), error.headers);
    }
  };
}
