// A local OpenAI-compatible server for tests and benchmarks: POST /chat/completions streams SSE (or answers
// JSON) with a configurable time to first token, supports tool calls, and GET /models answers (the openai
// plugin calls it when constructed). The reply of each request comes from a scripted responder.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatMessageIn {
  role: string;
  content?: string | { type: string; text?: string }[] | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessageIn[];
  tools?: { type: string; function: { name: string } }[];
  stream?: boolean;
}

export interface ScriptedReply {
  text?: string;
  toolCalls?: { name: string; arguments: Record<string, unknown> | string }[];
  /** Overrides the server's time to first token for this reply (ms). */
  ttftMs?: number;
  /** Delay between streamed chunks (ms). */
  chunkDelayMs?: number;
}

export type Responder = (req: ChatRequest, index: number) => ScriptedReply | Promise<ScriptedReply>;

export interface FakeOpenAI {
  url: string;
  /** Requests received, in order. */
  requests: ChatRequest[];
  setResponder(r: Responder): void;
  close(): Promise<void>;
}

/** Text of a message's content. */
export function contentText(m: ChatMessageIn): string {
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) return m.content.map((p) => p.text ?? '').join('');
  return '';
}

/** The last user message of a request. */
export function lastUserText(req: ChatRequest): string {
  for (let i = req.messages.length - 1; i >= 0; i--) if (req.messages[i]!.role === 'user') return contentText(req.messages[i]!);
  return '';
}

/**
 * A stand-in that answers from what it was told: the first answer one of whose words is in the last user
 * message (whole words, any case), else `otherwise`. A test that expects a given answer then fails when the
 * transcript the model received lost the question's words.
 */
export function answerFromWords(answers: { words: string[]; text: string }[], otherwise: string): (req: ChatRequest) => ScriptedReply {
  return (req) => {
    const said = new Set(lastUserText(req).toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []);
    const hit = answers.find((a) => a.words.some((w) => said.has(w.toLowerCase())));
    return { text: hit ? hit.text : otherwise };
  };
}

/** True when the request carries a tool result after its last user message (the model must now answer it). */
export function pendingToolResult(req: ChatRequest): ChatMessageIn | null {
  const last = req.messages[req.messages.length - 1];
  return last?.role === 'tool' ? last : null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startFakeOpenAI(opts: { ttftMs?: number; chunkDelayMs?: number; responder?: Responder } = {}): Promise<FakeOpenAI> {
  let responder: Responder = opts.responder ?? (() => ({ text: 'Okay.' }));
  const requests: ChatRequest[] = [];
  let n = 0;

  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').replace(/\?.*$/, '').replace(/^\/v1/, '');
    if (req.method === 'GET' && path === '/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'test' }] }));
      return;
    }
    if (req.method !== 'POST' || path !== '/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      let body: ChatRequest;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      requests.push(body);
      const index = n++;
      let reply: ScriptedReply;
      try {
        reply = await responder(body, index);
      } catch (err) {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: String(err) } }));
        return;
      }
      const id = `chatcmpl-${index}`;
      const created = Math.floor(Date.now() / 1000);
      const model = body.model;
      const toolCalls = (reply.toolCalls ?? []).map((t, i) => ({
        index: i,
        id: `call_${index}_${i}`,
        type: 'function',
        function: { name: t.name, arguments: typeof t.arguments === 'string' ? t.arguments : JSON.stringify(t.arguments) },
      }));
      const text = reply.text ?? '';
      const usage = { prompt_tokens: 10 * body.messages.length, completion_tokens: Math.max(1, text.split(/\s+/).length), total_tokens: 0 };
      usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
      const finish = toolCalls.length ? 'tool_calls' : 'stop';
      await sleep(reply.ttftMs ?? opts.ttftMs ?? 0);
      if (res.destroyed) return;

      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created,
            model,
            choices: [{ index: 0, message: { role: 'assistant', content: text || null, ...(toolCalls.length ? { tool_calls: toolCalls.map(({ index: _i, ...t }) => t) } : {}) }, finish_reason: finish }],
            usage,
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      const send = (choices: unknown[], extra: Record<string, unknown> = {}) =>
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`);
      const delay = reply.chunkDelayMs ?? opts.chunkDelayMs ?? 0;
      // Words as separate chunks, as a real model streams tokens.
      const pieces = text ? text.match(/\S+\s*/g) ?? [text] : [];
      send([{ index: 0, delta: { role: 'assistant', content: pieces.length ? pieces[0] : '' }, finish_reason: null }]);
      for (const p of pieces.slice(1)) {
        if (delay) await sleep(delay);
        if (res.destroyed) return;
        send([{ index: 0, delta: { content: p }, finish_reason: null }]);
      }
      for (const tc of toolCalls) send([{ index: 0, delta: { tool_calls: [tc] }, finish_reason: null }]);
      send([{ index: 0, delta: {}, finish_reason: finish }]);
      send([], { usage });
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    setResponder(r) {
      responder = r;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
