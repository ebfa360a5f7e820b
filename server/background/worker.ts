/**
 * The background thread (started by thread.ts): scrypt, and WAL checkpoints of each
 * watched SQLite file on a connection of its own. Why each is here, and the rewind
 * handshake, are explained in thread.ts.
 */
import { scryptSync } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { type CheckpointedDatabase, catchUp, checkpoint, openForCheckpoints } from '../store/sqlite/commits.ts';
import type { FromServer, FromThread, WorkerData } from './protocol.ts';

interface Watched {
  db: CheckpointedDatabase;
  rewindFrames: number;
  holding: boolean;
}

const port = parentPort!;
const { checkpointIntervalMs } = workerData as WorkerData;
const watched = new Map<number, Watched>();
const send = (message: FromThread) => port.postMessage(message);

setInterval(() => {
  for (const [watchId, w] of watched) {
    if (w.holding) continue;
    const done = catchUp(w.db);
    // Everything in the WAL is copied and it is long: only the writer can rewind it, on
    // its next commit, and only if no commit lands before that; so the server is asked to
    // hold its commits while the last frames are copied.
    if (done && done.busy === 0 && done.log >= w.rewindFrames && done.checkpointed === done.log) {
      w.holding = true;
      send({ type: 'hold', watchId });
    }
  }
}, checkpointIntervalMs);

function answer(message: Exclude<FromServer, { type: 'held' }>): FromThread {
  switch (message.type) {
    case 'scrypt': {
      const key = scryptSync(message.password, message.salt, message.keylen, message.options);
      return { id: message.id, key };
    }
    case 'watch': {
      const db = openForCheckpoints(message.file);
      watched.set(message.id, { db, rewindFrames: message.rewindFrames, holding: false });
      return { id: message.id };
    }
    case 'unwatch':
      watched.get(message.watchId)?.db.close();
      watched.delete(message.watchId);
      return { id: message.id };
  }
}

port.on('message', (message: FromServer) => {
  if (message.type === 'held') {
    // The server holds its commits: copy what came in since, then let it go on.
    const w = watched.get(message.watchId);
    if (w) {
      checkpoint(w.db);
      w.holding = false;
    }
    send({ type: 'release', watchId: message.watchId });
    return;
  }
  try {
    send(answer(message));
  } catch (error) {
    send({ id: message.id, error: error instanceof Error ? error.message : String(error) });
  }
});
