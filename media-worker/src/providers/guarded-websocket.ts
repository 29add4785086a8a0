// A realtime model's WebSocket under the model egress guard (docs/security.md, "Realtime models"), for both
// providers' connection steps (realtime.ts for OpenAI Realtime, gemini-live.ts for Gemini Live): the URL is checked
// as its http(s) form (the upgrade is an HTTP request), and the upgrade's connection resolves its host through the
// guard's own lookup (undici's WebSocket over a guarded dispatcher), so the address checked is the one connected to,
// with no DNS rebinding in between. A redirect of the upgrade is an error (WebSocket's own rule), never followed.
import { WebSocket } from 'undici';
import { checkUrl, createGuardedAgent, type SsrfOptions } from '../../../shared/ssrf.ts';

export interface GuardedWebSocketOptions {
  headers: Record<string, string>;
  ssrf: SsrfOptions;
  /** The connection's bound: a socket not open by then is closed (its error and close events follow). */
  timeoutMs: number;
}

/** Opens the WebSocket through the guard; throws SsrfBlockedError at once for a URL the guard refuses. */
export function guardedWebSocket(url: string, o: GuardedWebSocketOptions): WebSocket {
  checkUrl(url.replace(/^ws/, 'http'), o.ssrf);
  const dispatcher = createGuardedAgent({ ...o.ssrf, connectTimeoutMs: o.timeoutMs });
  const ws = new WebSocket(url, { dispatcher, headers: o.headers });
  const timer = setTimeout(() => ws.readyState === WebSocket.CONNECTING && ws.close(), o.timeoutMs);
  ws.addEventListener('open', () => clearTimeout(timer), { once: true });
  // The dispatcher goes with the connection.
  ws.addEventListener(
    'close',
    () => {
      clearTimeout(timer);
      void dispatcher.close();
    },
    { once: true },
  );
  return ws;
}
