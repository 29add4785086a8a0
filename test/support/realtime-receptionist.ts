// The realtime e2e calls' script (test/e2e/realtime-call.test.ts on the OpenAI Realtime double, gemini-live-call.test.ts
// on the Gemini Live double; both doubles take these script types): the dental receptionist's model, which says a
// fixed sentence word for word, answers the opening-hours question through the `opening_hours` server-URL tool, talks
// long when asked to (to be talked over), and says goodbye to anything else; and the tool's server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ANSWER } from './dental-phrases.ts';
import type { RealtimeResponder, RealtimeTranscriber } from './realtime-session.ts';

/** What the caller asks first. */
export const QUESTION = 'What time do you open tomorrow morning?';
/** An answer long enough to talk over (festival speaks it in well over ten seconds). */
export const LONG =
  'We open at nine in the morning on weekdays and at ten on Saturdays, we close at six in the evening, our hygienists work late on Tuesdays and Thursdays, and we are closed on Sundays and on public holidays.';
export const GOODBYE = 'Goodbye and have a nice day.';

/** The caller's words per turn: the question, then thanks (the doubles do no recognition). */
export const receptionistTranscriber: RealtimeTranscriber = ({ index }) => (index === 0 ? QUESTION : 'Thank you.');

/**
 * The model: a fixed sentence as told; the question answered through the tool (or, `long`, at length without it);
 * the tool's result spoken; a goodbye to anything else.
 */
export function receptionistResponder(opts: { long?: boolean } = {}): RealtimeResponder {
  return (turn) => {
    const fixed = /Say exactly [^"]*"([^"]*)"\s*$/.exec(turn.responseInstructions ?? '');
    if (fixed) return { text: fixed[1]! };
    const lastUser = turn.items.findLastIndex((i) => i.type === 'message' && i.role === 'user');
    const out = turn.items.findLastIndex((i) => i.type === 'function_call_output');
    if (out > lastUser) return { text: /nine/.test(turn.items[out]!.output ?? '') ? ANSWER : 'Sorry, we are closed on Sundays.' };
    if (/\bopen\b/i.test(turn.lastUser)) return opts.long ? { text: LONG } : { toolCalls: [{ name: 'opening_hours', arguments: { day: 'tomorrow' } }] };
    return { text: GOODBYE };
  };
}

/** The `opening_hours` tool's server: every request recorded, every answer nine in the morning. */
export async function startHoursTool(): Promise<{ url: string; requests: Record<string, unknown>[]; close: () => void }> {
  const requests: Record<string, unknown>[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push(JSON.parse(body));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"opens":"nine in the morning"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hours`, requests, close: () => server.close() };
}

/** The tool's definition for POST /v1/tools. */
export const hoursTool = (url: string) => ({
  type: 'function',
  name: 'opening_hours',
  description: 'When the practice opens on a day',
  parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] },
  url,
});
