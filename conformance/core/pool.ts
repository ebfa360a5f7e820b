/** Running a list of jobs a few at a time: checks, and the scenarios of the client mode. */

/** Runs `items` through `worker` with at most `limit` at once, keeping their order in the output. */
export async function pool<T, R>(items: T[], limit: number, worker: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const index = next++;
      out[index] = await worker(items[index]!);
    }
  });
  await Promise.all(lanes);
  return out;
}
