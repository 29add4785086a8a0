// Waiting for a condition outside the test's control (a row, a room, a job), without a timed assertion: the bound
// only keeps a broken run from hanging.

/** `fn`'s first truthy value, asking every 100 ms, at most `tries` times. */
export async function pollUntil<T>(fn: () => Promise<T | null | undefined | false>, tries: number): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('condition not reached');
}
