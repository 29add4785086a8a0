// A local stand-in for Cartesia's HTTP TTS (POST /tts/bytes): checks the X-API-Key and Cartesia-Version
// headers, answers raw pcm_s16le at the requested rate (a tone, 60 ms per character) streamed in small
// chunks of odd sizes, or a scripted error as Cartesia sends it (status with a JSON or text body).
import http from 'node:http';
import { listenOnLoopback } from './loopback-server.ts';

export interface CartesiaRequest {
  headers: http.IncomingHttpHeaders;
  body: {
    model_id: string;
    transcript: string;
    voice: { mode: string; id: string; __experimental_controls?: Record<string, unknown> };
    output_format: { container: string; encoding: string; sample_rate: number };
    language?: string;
    generation_config?: Record<string, unknown>;
  };
}

export interface CartesiaScriptedReply {
  error?: { status: number; body: string };
  /** Delay before the response headers (ms). */
  delayMs?: number;
}

export interface FakeCartesia {
  url: string;
  apiKey: string;
  requests: CartesiaRequest[];
  setResponder(r: (req: CartesiaRequest, index: number) => CartesiaScriptedReply): void;
  close(): Promise<void>;
}

export const MS_PER_CHARACTER = 60;

export async function startFakeCartesia(apiKey = 'sk_car_test'): Promise<FakeCartesia> {
  let respond: (req: CartesiaRequest, index: number) => CartesiaScriptedReply = () => ({});
  const requests: CartesiaRequest[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method !== 'POST' || req.url !== '/tts/bytes') {
      res.writeHead(404).end('Not Found');
      return;
    }
    if (req.headers['x-api-key'] !== apiKey) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Invalid API key' }));
      return;
    }
    if (!req.headers['cartesia-version']) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Cartesia-Version header is required' }));
      return;
    }
    const request: CartesiaRequest = { headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
    const reply = respond(request, requests.push(request) - 1);
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (reply.error) {
      res.writeHead(reply.error.status, { 'content-type': 'application/json', 'x-request-id': `req_${requests.length}` }).end(reply.error.body);
      return;
    }
    const { sample_rate: rate, encoding, container } = request.body.output_format;
    if (encoding !== 'pcm_s16le' || container !== 'raw') {
      res.writeHead(400).end(JSON.stringify({ error: 'unsupported output format in this double' }));
      return;
    }
    const samples = Math.round((request.body.transcript.length * MS_PER_CHARACTER * rate) / 1000);
    const pcm = Buffer.alloc(samples * 2);
    for (let i = 0; i < samples; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 220 * i) / rate)), i * 2);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' });
    for (let off = 0; off < pcm.length; off += 999) {
      res.write(pcm.subarray(off, off + 999));
      await new Promise((r) => setImmediate(r));
    }
    res.end();
  });
  const { origin, close } = await listenOnLoopback(server);
  return {
    url: origin,
    apiKey,
    requests,
    setResponder(r) {
      respond = r;
    },
    close,
  };
}
