// OpenTelemetry traces for the control plane and the media workers. Off unless the standard OTLP variables
// ask for it (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp);
// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off. The exporter reads the rest of the
// OTEL_* variables itself (headers, timeout, compression), and the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES. Trace context crosses processes as W3C `traceparent`: in HTTP headers (the
// internal API) and in the dispatch metadata of a call (control plane -> worker job).
import { type Context, type Span, SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

export { SpanKind, SpanStatusCode, context, trace, type Context, type Span };

export interface Tracing {
  provider: NodeTracerProvider | null;
  /** Exports what is buffered (a job process calls it before it exits). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
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
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis: 1000 })] });
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
