// A minimal typed event emitter: `on` returns the function that removes the listener. A listener that
// throws does not stop the others (a page's handler must not break the call).

export class Emitter<Events extends Record<string, unknown>> {
  #listeners = new Map<keyof Events, Set<(v: never) => void>>();

  on<K extends keyof Events>(ev: K, fn: (v: Events[K]) => void): () => void {
    let set = this.#listeners.get(ev);
    if (!set) this.#listeners.set(ev, (set = new Set()));
    set.add(fn);
    return () => void set.delete(fn);
  }

  emit<K extends keyof Events>(ev: K, value: Events[K]): void {
    for (const fn of [...(this.#listeners.get(ev) ?? [])]) {
      try {
        (fn as (v: Events[K]) => void)(value);
      } catch (err) {
        console.error(`vap: a "${String(ev)}" listener threw`, err);
      }
    }
  }

  clear(): void {
    this.#listeners.clear();
  }
}
