// OpenTelemetry traces for the control plane and the media workers. Off unless the standard OTLP variables
// ask for it (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp);
// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off. The exporter reads the rest of the
// OTEL_* variables itself (headers, timeout, compression), and the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES. Trace context crosses processes as W3C `traceparent`: in HTTP headers (the
// internal API) and in the dispatch metadata of a call (control plane -> worker job).
import { type Context, type Span, SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

export { SpanKind, SpanStatusCode, context, trace, type Context, type Span };

export interface Tracing {
  provider: NodeTracerProvider | null;
  /** Exports what is buffered (a job process calls it before it exits). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

// ---- Conversation content in spans --------------------------------------------------------------------------
// The agents framework puts what callers and the model say on its spans: attributes with a `pii` segment
// (`lk.pii.user_input`), the GenAI content attributes (`gen_ai.input.messages`...) and message events. For a
// call whose data retention keeps no raw text (shared/privacy.ts), the worker turns `withholdConversation` on
// and the exporter drops those before they leave the process.

let withholding = false;

/** Drop conversation content from the spans exported from now on (a job process serves one call). */
export function withholdConversation(on: boolean): void {
  withholding = on;
}

/** GenAI attributes that are metadata (models, token counts, settings); every other `gen_ai.*` may hold content. */
const GEN_AI_METADATA = /^gen_ai\.(usage|request|response|operation|provider|system$|agent\.name$)/;

export function isConversationAttribute(key: string): boolean {
  return /(^|\.)pii(\.|$)/i.test(key) || (key.startsWith('gen_ai.') && !GEN_AI_METADATA.test(key));
}

function withoutConversation(span: ReadableSpan): ReadableSpan {
  const keep = (attrs: ReadableSpan['attributes']) => Object.fromEntries(Object.entries(attrs).filter(([k]) => !isConversationAttribute(k)));
  // The span itself stays intact (other processors may hold it); the exporter gets a view without the content.
  return Object.create(span, {
    attributes: { value: keep(span.attributes) },
    events: { value: span.events.filter((e) => !e.name.startsWith('gen_ai.')).map((e) => (e.attributes ? { ...e, attributes: keep(e.attributes) } : e)) },
  }) as ReadableSpan;
}

/** Wraps an exporter: while withholding, spans go out without conversation content. */
export class WithholdingExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  constructor(inner: SpanExporter) {
    this.#inner = inner;
  }
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.#inner.export(withholding ? spans.map(withoutConversation) : spans, done);
  }
  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }
}

const off: Tracing = { provider: null, flush: async () => {}, shutdown: async () => {} };
let current: Tracing | null = null;

export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').toLowerCase();
  if (exporters === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || exporters.split(',').includes('otlp'));
}

/** Sets up tracing once per process (a no-op when it is off). */
export function initTracing(defaultServiceName: string, env: NodeJS.ProcessEnv = process.env): Tracing {
  if (current) return current;
  if (!tracingEnabled(env)) return (current = off);
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: defaultServiceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new WithholdingExporter(new OTLPTraceExporter()), { scheduledDelayMillis: 1000 })] });
  // Global provider, AsyncLocalStorage context manager, W3C trace context and baggage propagators.
  provider.register();
  current = {
    provider,
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
  return current;
}

export const tracer = () => trace.getTracer('vap');

/** `{traceparent, tracestate?}` of the active span, for metadata or headers (empty when tracing is off). */
export function traceCarrier(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The context a `traceparent` (in headers or parsed metadata) names; the active one when there is none. */
export function contextFrom(carrier: Record<string, unknown> | undefined | null): Context {
  if (!carrier) return context.active();
  const strings: Record<string, string> = {};
  for (const k of ['traceparent', 'tracestate']) if (typeof carrier[k] === 'string') strings[k] = carrier[k];
  return propagation.extract(context.active(), strings);
}

/** Runs fn in a span that ends when fn settles, recording an exception as the span's error. */
export async function inSpan<T>(name: string, opts: { kind?: SpanKind; attributes?: Record<string, string | number | boolean>; parent?: Context }, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, ...(opts.attributes ? { attributes: opts.attributes } : {}) }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
    throw err;
  } finally {
    span.end();
  }
}
