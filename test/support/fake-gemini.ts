// A local stand-in for the Gemini API's generateContent (POST /v1beta/models/{model}:generateContent) speaking
// its wire protocol: `x-goog-api-key` (or `?key=`), `systemInstruction`, `contents[].parts[].text`,
// `generationConfig`; answers `candidates[0].content.parts[].text` and `usageMetadata`, errors as
// {error: {code, message, status}}.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GeminiRequest {
  model: string;
  apiKey: string | null;
  body: {
    systemInstruction?: { parts: { text: string }[] };
    contents: { role?: string; parts: { text?: string }[] }[];
    generationConfig?: Record<string, unknown>;
  };
}

export interface FakeGemini {
  /** Base URL with the API version, e.g. http://127.0.0.1:1234/v1beta */
  url: string;
  requests: GeminiRequest[];
  setResponder(r: (req: GeminiRequest) => { text: string } | { error: { code: number; status: string; message: string } }): void;
  close(): Promise<void>;
}

export async function startFakeGemini(): Promise<FakeGemini> {
  const requests: GeminiRequest[] = [];
  let respond: Parameters<FakeGemini['setResponder']>[0] = () => ({ text: 'Hello.' });
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://localhost');
    const m = /^\/v1beta\/models\/([^/:]+):generateContent$/.exec(url.pathname);
    if (req.method !== 'POST' || !m) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 404, message: 'Not found', status: 'NOT_FOUND' } }));
      return;
    }
    const apiKey = (req.headers['x-goog-api-key'] as string | undefined) ?? url.searchParams.get('key');
    if (!apiKey) {
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 403, message: 'Method doesn\'t allow unregistered callers', status: 'PERMISSION_DENIED' } }));
      return;
    }
    const request: GeminiRequest = { model: decodeURIComponent(m[1]!), apiKey, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
    requests.push(request);
    const reply = respond(request);
    if ('error' in reply) {
      res.writeHead(reply.error.code, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        candidates: [{ content: { role: 'model', parts: [{ text: reply.text }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 20, candidatesTokenCount: reply.text.split(/\s+/).length, totalTokenCount: 0 },
        modelVersion: request.model,
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1beta`,
    requests,
    setResponder(r) {
      respond = r;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
