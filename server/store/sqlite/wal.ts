/**
 * The WAL's upkeep: checkpoints on the background thread (background/thread.ts), which
 * holds the group commit while it copies the last frames before a rewind. A commit still
 * checkpoints itself if the WAL grows well past the rewind length because the thread fell
 * behind; after such a burst the file is cut back to twice the rewind length.
 */
import type Database from 'better-sqlite3';
import type { Background, CommitHold } from '../../background/thread.ts';

/** WAL length (4 KiB frames) at which the thread has the WAL rewound, by default. */
export const REWIND_FRAMES = 16_384;

export async function keepWalShort(
  database: Database.Database,
  file: string,
  background: Background,
  commits: CommitHold,
  rewindFrames = REWIND_FRAMES,
): Promise<() => Promise<void>> {
  const stop = await background.checkpoint(file, { rewindFrames, commits });
  if (!stop) return async () => undefined;
  database.pragma(`wal_autocheckpoint = ${rewindFrames * 2 + 8192}`);
  database.pragma(`journal_size_limit = ${rewindFrames * 4096 * 2}`);
  return stop;
}
