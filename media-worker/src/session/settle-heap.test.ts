import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { settleHeap } from './settle-heap.ts';

describe('settleHeap', () => {
  it('collects what nothing holds, in a process started without --expose-gc', async () => {
    const hadGc = 'gc' in globalThis;
    let ref: WeakRef<object> | undefined;
    (() => {
      ref = new WeakRef({ samples: new Float64Array(1 << 16) });
    })();
    // A WeakRef's target is kept until the turn that made it ends.
    await nextTurn();
    expect(settleHeap()).toBe(true);
    await nextTurn();
    expect(ref!.deref()).toBeUndefined();
    // The collector is had from a new context: the job's own gets no `gc` global.
    expect('gc' in globalThis).toBe(hadGc);
  });

  it('holds on to what is still referenced', async () => {
    const kept = { samples: new Float64Array(16) };
    const ref = new WeakRef(kept);
    await nextTurn();
    expect(settleHeap()).toBe(true);
    await nextTurn();
    expect(ref.deref()).toBe(kept);
  });
});
