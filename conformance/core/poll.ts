/**
 * Reading until something shows: a target may apply an attempt, write a delivery record
 * or send a webhook asynchronously (the document states no timing), so what is awaited
 * is read again, with a growing pause, until it shows or the bound (--settle-timeout)
 * passes. Gives the last reading either way: judging it is the caller's.
 */
export async function poll<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 50; ; pause = Math.min(pause * 2, 500)) {
    const value = await read();
    if (done(value) || Date.now() + pause > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
