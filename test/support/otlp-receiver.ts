// An OTLP/HTTP trace receiver for tests: what a collector is to the exporters the processes run
// (@opentelemetry/exporter-trace-otlp-proto, configured by OTEL_EXPORTER_OTLP_ENDPOINT). It decodes the
// protobuf ExportTraceServiceRequest (only the fields tests read) and keeps the spans.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, string | number | boolean>;
}

/** Protobuf wire format: [field number, wire type, value] for each field of a message. */
function* fields(buf: Buffer): Generator<[number, number, Buffer | bigint]> {
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const field = key >> 3;
    const wire = key & 7;
    if (wire === 0) yield [field, wire, varint()];
    else if (wire === 1) {
      yield [field, wire, buf.subarray(i, i + 8)];
      i += 8;
    }
    else if (wire === 2) {
      const len = Number(varint());
      yield [field, wire, buf.subarray(i, i + len)];
      i += len;
    } else if (wire === 5) {
      yield [field, wire, buf.subarray(i, i + 4)];
      i += 4;
    }
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

function keyValue(buf: Buffer): [string, string | number | boolean] {
  let key = '';
  let value: string | number | boolean = '';
  for (const [f, , v] of fields(buf)) {
    if (f === 1) key = (v as Buffer).toString('utf8');
    if (f === 2) {
      for (const [af, aw, av] of fields(v as Buffer)) {
        if (af === 1) value = (av as Buffer).toString('utf8'); // string_value
        else if (af === 2) value = (av as bigint) !== 0n; // bool_value
        else if (af === 3) value = Number(av as bigint); // int_value
        else if (af === 4 && aw === 1) value = (av as Buffer).readDoubleLE(0); // double_value
      }
    }
  }
  return [key, value];
}

export function decodeTraceRequest(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const [f, , rs] of fields(body)) {
    if (f !== 1) continue; // ResourceSpans
    let service = '';
    const scopes: Buffer[] = [];
    for (const [rf, , rv] of fields(rs as Buffer)) {
      if (rf === 1) for (const [af, , av] of fields(rv as Buffer)) if (af === 1) { const [k, v] = keyValue(av as Buffer); if (k === 'service.name') service = String(v); }
      if (rf === 2) scopes.push(rv as Buffer);
    }
    for (const scope of scopes) {
      for (const [sf, , sv] of fields(scope)) {
        if (sf !== 2) continue; // Span
        const span: ReceivedSpan = { service, traceId: '', spanId: '', parentSpanId: '', name: '', attributes: {} };
        for (const [pf, , pv] of fields(sv as Buffer)) {
          if (pf === 1) span.traceId = (pv as Buffer).toString('hex');
          else if (pf === 2) span.spanId = (pv as Buffer).toString('hex');
          else if (pf === 4) span.parentSpanId = (pv as Buffer).toString('hex');
          else if (pf === 5) span.name = (pv as Buffer).toString('utf8');
          else if (pf === 9) { const [k, v] = keyValue(pv as Buffer); span.attributes[k] = v; }
        }
        out.push(span);
      }
    }
  }
  return out;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url !== '/v1/traces') return void res.writeHead(404).end();
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      try {
        spans.push(...decodeTraceRequest(body));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
