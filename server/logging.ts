/**
 * The server's log: pino, one JSON line per event on stderr (pretty lines when a person
 * reads a terminal). Buffered: one write per few kilobytes under load; when the server is
 * quiet, what is buffered goes out within FLUSH_MS, and all of it on close.
 */
import pino, { type DestinationStream, type Logger } from 'pino';

/** How late a log line may reach stderr when the server is quiet. */
const FLUSH_MS = 200;

export interface ServerLog {
  log: Logger;
  /** Writes out what is buffered. */
  close(): void;
}

/** pino-pretty on stderr, loaded only for a terminal. */
async function prettyStderr(): Promise<DestinationStream> {
  const { default: pretty } = await import('pino-pretty');
  return pretty({
    destination: 2,
    sync: true,
    // https://no-color.org: a set, non-empty NO_COLOR turns colours off.
    colorize: !process.env.NO_COLOR,
    translateTime: 'SYS:HH:MM:ss.l',
    // A request's fields on one line, as an access log shows them.
    ignore: 'pid,hostname,reqId,method,path,status,ms',
    messageFormat: '{msg}{if method}: {method} {path} {status} in {ms} ms{end}{if reqId} ({reqId}){end}',
  });
}

/** `given`: a logger of the caller's (kept as it is); otherwise one on stderr at LOG_LEVEL (default info). */
export async function serverLog(given?: Logger): Promise<ServerLog> {
  if (given) return { log: given, close: () => undefined };
  const level = process.env.LOG_LEVEL ?? 'info';
  // A person at a terminal reads the log: pretty lines. Anything else (a file, a pipe, a
  // collector) gets JSON lines.
  if (process.stderr.isTTY === true) return { log: pino({ level }, await prettyStderr()), close: () => undefined };
  const destination = pino.destination({ dest: 2, sync: false, minLength: 4096 });
  let unwritten = false;
  const log = pino(
    {
      level,
      hooks: {
        streamWrite: (line) => {
          unwritten = true;
          return line;
        },
      },
    },
    destination,
  );
  const flush = setInterval(() => {
    if (!unwritten) return;
    unwritten = false;
    destination.flush();
  }, FLUSH_MS).unref();
  return {
    log,
    close() {
      clearInterval(flush);
      destination.flushSync();
    },
  };
}
