// The model's warm-up waits for the greeting. agents-js warms the LLM's connection as the session starts
// (LLM.prewarm: a token-free request, GET /models for OpenAI, so DNS, TLS and keep-alive are ready for the first
// reply). The greeting is already synthesized and needs no model, but the request's work on the job's loop
// (building it, the guarded fetch's first use in the process, the response) lands between the session's start
// and the event that lets the greeting play: in a CPU profile of bench:firstaudio's phone calls, about 30 ms of
// the call's first second. Held until the greeting plays, the warm-up still ends long before the caller's first
// turn needs the model (a greeting lasts seconds).

export interface Prewarmable {
  prewarm(): void;
}

/**
 * Holds `model.prewarm()` until the returned function is called or `maxMs` has passed, whichever is first; then
 * runs it once if it was asked for meanwhile, and lets later calls through.
 */
export function deferPrewarm(model: Prewarmable, maxMs: number): () => void {
  const prewarm = model.prewarm.bind(model);
  let asked = false;
  let held = true;
  const go = () => {
    if (!held) return;
    held = false;
    clearTimeout(timer);
    if (asked) prewarm();
  };
  const timer = setTimeout(go, maxMs);
  timer.unref();
  model.prewarm = () => {
    if (held) asked = true;
    else prewarm();
  };
  return go;
}
