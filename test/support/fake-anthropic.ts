// A local stand-in for Anthropic's Messages API (POST /v1/messages) speaking its wire protocol: SSE events
// message_start, content_block_start/delta/stop (text_delta, input_json_delta), ping, message_delta,
// message_stop; `event: error` inside a stream; HTTP errors as {type: 'error', error: {type, message}} with
// a request-id header. Each reply comes from a scripted responder.
import http from 'node:http';
import { listenOnLoopback } from './loopback-server.ts';

export interface AnthropicRequest {
  headers: http.IncomingHttpHeaders;
  body: {
    model: string;
    max_tokens: number;
    system?: string | { type: string; text: string }[];
    messages: { role: string; content: string | Record<string, unknown>[] }[];
    tools?: { name: string; description?: string; input_schema: Record<string, unknown> }[];
    tool_choice?: Record<string, unknown>;
    temperature?: number;
    stream?: boolean;
  };
}

export interface AnthropicScriptedReply {
  text?: string;
  toolCalls?: { id?: string; name: string; input: Record<string, unknown> }[];
  /** Delay before the first event (ms). */
  ttftMs?: number;
  /** Answer with this HTTP error instead (e.g. 429 rate_limit_error, 529 overloaded_error). */
  httpError?: { status: number; type: string; message?: string };
  /** Send `event: error` after the text (or at once when there is none). */
  streamError?: { type: string; message?: string };
  usage?: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number };
}

export type AnthropicResponder = (req: AnthropicRequest, index: number) => AnthropicScriptedReply;

export interface FakeAnthropic {
  /** Base URL for the SDK (`baseURL`). */
  url: string;
  requests: AnthropicRequest[];
  setResponder(r: AnthropicResponder): void;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startFakeAnthropic(responder: AnthropicResponder = () => ({ text: 'Hello.' })): Promise<FakeAnthropic> {
  let respond = responder;
  const requests: AnthropicRequest[] = [];
  let counter = 0;

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method !== 'POST' || req.url?.split('?')[0] !== '/v1/messages') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'Not found' } }));
      return;
    }
    const request: AnthropicRequest = { headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
    const reply = respond(request, requests.push(request) - 1);
    const requestId = `req_fake_${++counter}`;
    if (reply.ttftMs) await sleep(reply.ttftMs);

    if (reply.httpError) {
      res.writeHead(reply.httpError.status, { 'content-type': 'application/json', 'request-id': requestId });
      res.end(
        JSON.stringify({
          type: 'error',
          error: { type: reply.httpError.type, message: reply.httpError.message ?? reply.httpError.type },
          request_id: requestId,
        }),
      );
      return;
    }

    const id = `msg_fake_${counter}`;
    const usage = reply.usage ?? { input_tokens: 12, output_tokens: 0 };
    const content: Record<string, unknown>[] = [];
    if (reply.text) content.push({ type: 'text', text: reply.text });
    for (const [i, call] of (reply.toolCalls ?? []).entries()) {
      content.push({ type: 'tool_use', id: call.id ?? `toolu_fake_${counter}_${i}`, name: call.name, input: call.input });
    }
    const stopReason = reply.toolCalls?.length ? 'tool_use' : 'end_turn';
    const outputTokens = Math.max(1, (reply.text ?? '').split(/\s+/).filter(Boolean).length + (reply.toolCalls?.length ?? 0) * 10);

    if (!request.body.stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
      res.end(
        JSON.stringify({
          id,
          type: 'message',
          role: 'assistant',
          model: request.body.model,
          content,
          stop_reason: stopReason,
          stop_sequence: null,
          usage: { ...usage, output_tokens: outputTokens },
        }),
      );
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': requestId });
    const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    send('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: request.body.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    });
    send('ping', { type: 'ping' });
    let index = 0;
    if (reply.text) {
      send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (const piece of reply.text.match(/\S+\s*/g) ?? []) {
        send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      }
      send('content_block_stop', { type: 'content_block_stop', index });
      index++;
    }
    if (reply.streamError) {
      send('error', { type: 'error', error: { type: reply.streamError.type, message: reply.streamError.message ?? reply.streamError.type } });
      res.end();
      return;
    }
    for (const block of content.filter((b) => b.type === 'tool_use')) {
      send('content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } });
      // Arguments arrive as JSON split at arbitrary points.
      const json = JSON.stringify(block.input);
      for (let i = 0; i < json.length; i += 7) {
        send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json.slice(i, i + 7) } });
      }
      send('content_block_stop', { type: 'content_block_stop', index });
      index++;
    }
    send('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } });
    send('message_stop', { type: 'message_stop' });
    res.end();
  });

  const { origin, close } = await listenOnLoopback(server);
  return {
    url: origin,
    requests,
    setResponder(r) {
      respond = r;
    },
    close,
  };
}
