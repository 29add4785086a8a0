// A local OpenAI-compatible server for tests and benchmarks: POST /chat/completions streams SSE (or answers
// JSON) with a configurable time to first token, supports tool calls, and GET /models answers (the openai
// plugin calls it when constructed). The reply of each request comes from a scripted responder. Each
// completion is recorded with the tokens it streamed and whether the client aborted it (preemptive
// generation's wasted tokens). POST /audio/speech answers raw 24 kHz PCM (the openai TTS plugin's `pcm`
// format) after a fixed time to first byte, with audio from a scripted speaker. The realtime transcription
// WebSocket (/v1/realtime?intent=transcription, the openai STT plugin's) is on the same port
// (fake-openai-transcription.ts), and so is the Realtime conversation WebSocket (/v1/realtime?model=..., the openai
// plugin's RealtimeModel: fake-openai-realtime.ts), which speaks with the same speaker.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { acceptTranscription, type TranscriptionConnection, type TranscriptionOptions, type Transcriber } from './fake-openai-transcription.ts';
import { acceptRealtime, type RealtimeConnection, type RealtimeOptions, type RealtimeResponder, type RealtimeTranscriber } from './fake-openai-realtime.ts';

export type { TranscriptionConnection, Transcriber, TranscriptionItem } from './fake-openai-transcription.ts';
export type { RealtimeConnection, RealtimeReply, RealtimeResponder, RealtimeTranscriber, RealtimeTurn } from './fake-openai-realtime.ts';

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

/** One chat completion as the server streamed it. */
export interface CompletionRecord {
  index: number;
  stream: boolean;
  /** Tokens (word pieces) of the reply. */
  tokens: number;
  /** Tokens written before the request ended. */
  streamed: number;
  /** The client closed the request before the reply ended. */
  aborted: boolean;
  finished: boolean;
  lastUser: string;
  text: string;
}

/** Audio for a speech request: 24 kHz mono int16 PCM. */
export type Speaker = (text: string) => Int16Array | Promise<Int16Array>;

export interface FakeOpenAI {
  url: string;
  /** Requests received, in order. */
  requests: ChatRequest[];
  completions: CompletionRecord[];
  /** Texts of /audio/speech requests, in order. */
  speechRequests: string[];
  /** The headers of every request, any path, in order (which credential reached the server). */
  headers: http.IncomingHttpHeaders[];
  /** Realtime transcription connections, in arrival order. */
  transcriptions: TranscriptionConnection[];
  /** Realtime conversation connections, in arrival order. */
  realtime: RealtimeConnection[];
  /** What a realtime conversation's model says in each response (default: "Okay."). */
  setRealtimeResponder(r: RealtimeResponder): void;
  /** What a realtime conversation hears in each committed user item (default: "Hello."). */
  setRealtimeTranscriber(t: RealtimeTranscriber): void;
  setResponder(r: Responder): void;
  setSpeaker(s: Speaker): void;
  /** What the transcription connections hear in each committed item (default: "Hello."). */
  setTranscriber(t: Transcriber): void;
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

export async function startFakeOpenAI(
  opts: {
    ttftMs?: number;
    chunkDelayMs?: number;
    responder?: Responder;
    ttsTtfbMs?: number;
    speaker?: Speaker;
    transcriber?: Transcriber;
    transcription?: TranscriptionOptions;
    realtime?: RealtimeOptions;
    realtimeResponder?: RealtimeResponder;
    realtimeTranscriber?: RealtimeTranscriber;
  } = {},
): Promise<FakeOpenAI> {
  let realtimeResponder: RealtimeResponder = opts.realtimeResponder ?? (() => ({ text: 'Okay.' }));
  let realtimeTranscriber: RealtimeTranscriber = opts.realtimeTranscriber ?? (() => 'Hello.');
  const realtime: RealtimeConnection[] = [];
  let responder: Responder = opts.responder ?? (() => ({ text: 'Okay.' }));
  let transcriber: Transcriber = opts.transcriber ?? (() => 'Hello.');
  const transcriptions: TranscriptionConnection[] = [];
  // Default speech: a quiet 440 Hz tone, 60 ms per word.
  let speaker: Speaker =
    opts.speaker ??
    ((text) => {
      const n = Math.max(1, text.split(/\s+/).length) * 0.06 * 24000;
      return Int16Array.from({ length: n }, (_, i) => Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / 24000)));
    });
  const requests: ChatRequest[] = [];
  const completions: CompletionRecord[] = [];
  const speechRequests: string[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  let n = 0;

  const server = http.createServer((req, res) => {
    headers.push(req.headers);
    const path = (req.url ?? '').replace(/\?.*$/, '').replace(/^\/v1/, '');
    if (req.method === 'GET' && path === '/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'test' }] }));
      return;
    }
    if (req.method === 'POST' && path === '/audio/speech') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        let input = '';
        try {
          input = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input?: string }).input ?? '');
        } catch {
          res.writeHead(400).end();
          return;
        }
        speechRequests.push(input);
        const pcm = await speaker(input);
        await sleep(opts.ttsTtfbMs ?? 0);
        if (res.destroyed) return;
        res.writeHead(200, { 'content-type': 'audio/pcm' });
        res.end(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
      });
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
      const pieces = text ? text.match(/\S+\s*/g) ?? [text] : [];
      const record: CompletionRecord = { index, stream: !!body.stream, tokens: pieces.length, streamed: 0, aborted: false, finished: false, lastUser: lastUserText(body), text };
      completions.push(record);
      // 'close' before the reply ended: the client gave up on it (an interrupted or discarded generation).
      res.once('close', () => {
        if (!record.finished) record.aborted = true;
      });
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
        record.streamed = pieces.length;
        record.finished = true;
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      const send = (choices: unknown[], extra: Record<string, unknown> = {}) =>
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`);
      const delay = reply.chunkDelayMs ?? opts.chunkDelayMs ?? 0;
      // Words as separate chunks, as a real model streams tokens.
      send([{ index: 0, delta: { role: 'assistant', content: pieces.length ? pieces[0] : '' }, finish_reason: null }]);
      record.streamed = Math.min(1, pieces.length);
      for (const p of pieces.slice(1)) {
        if (delay) await sleep(delay);
        if (res.destroyed) return;
        send([{ index: 0, delta: { content: p }, finish_reason: null }]);
        record.streamed++;
      }
      for (const tc of toolCalls) send([{ index: 0, delta: { tool_calls: [tc] }, finish_reason: null }]);
      send([{ index: 0, delta: {}, finish_reason: finish }]);
      send([], { usage });
      record.finished = true;
      res.end('data: [DONE]\n\n');
    });
  });
  server.on('upgrade', (req, socket, head) => {
    headers.push(req.headers);
    const rt = { options: opts.realtime ?? {}, responder: () => realtimeResponder, transcriber: () => realtimeTranscriber, speaker: () => speaker, connections: realtime };
    if (acceptRealtime(req, socket, head, rt)) return;
    const ctx = { options: opts.transcription ?? {}, transcriber: () => transcriber, connections: transcriptions };
    if (!acceptTranscription(req, socket, head, ctx)) socket.end('HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{"error":{"message":"not found"}}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    completions,
    speechRequests,
    headers,
    transcriptions,
    realtime,
    setRealtimeResponder(r) {
      realtimeResponder = r;
    },
    setRealtimeTranscriber(t) {
      realtimeTranscriber = t;
    },
    setResponder(r) {
      responder = r;
    },
    setSpeaker(sp) {
      speaker = sp;
    },
    setTranscriber(t) {
      transcriber = t;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const c of transcriptions) c.terminate();
        for (const c of realtime) c.terminate();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
