// Conversation content in exported spans (shared/tracing.ts): while a call withholds it, the exporter gets
// spans without `lk.pii.*` and GenAI content attributes or message events; metadata (models, token counts,
// ids) still goes out, and the span the other processors hold is untouched.
import { afterEach, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { isConversationAttribute, withholdConversation, WithholdingExporter } from './tracing.ts';

afterEach(() => withholdConversation(false));

function emit(): InMemorySpanExporter {
  const memory = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new WithholdingExporter(memory))] });
  const span = provider.getTracer('t').startSpan('llm_node', {
    attributes: {
      'lk.pii.user_input': 'my card is 4111 1111 1111 1111',
      'lk.PII.chat_ctx': 'card 4111',
      'gen_ai.input.messages': '[{"content":"4111 1111 1111 1111"}]',
      'gen_ai.tool.call.arguments': '{"card":"4111"}',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.usage.input_tokens': 42,
      'lk.room_id': 'RM_1',
    },
  });
  span.addEvent('gen_ai.user.message', { content: '4111 1111 1111 1111' });
  span.addEvent('first_token', { 'lk.pii.text': '4111', at: 1 });
  span.end();
  return memory;
}

describe('withholding conversation content from spans', () => {
  it('exports everything while off', () => {
    const [span] = emit().getFinishedSpans();
    expect(span!.attributes['lk.pii.user_input']).toContain('4111');
    expect(span!.events.map((e) => e.name)).toEqual(['gen_ai.user.message', 'first_token']);
  });

  it('drops the content and keeps the metadata while on', () => {
    withholdConversation(true);
    const [span] = emit().getFinishedSpans();
    expect(span!.attributes).toEqual({ 'gen_ai.request.model': 'gpt-4o-mini', 'gen_ai.usage.input_tokens': 42, 'lk.room_id': 'RM_1' });
    expect(span!.events.map((e) => [e.name, e.attributes])).toEqual([['first_token', { at: 1 }]]);
    expect(span!.name).toBe('llm_node');
    expect(span!.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.stringify(span!.attributes)).not.toContain('4111');
  });

  it('tells content attributes from metadata', () => {
    for (const k of ['lk.pii.transcript', 'x.pii', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.prompt.variable.name', 'gen_ai.retrieval.query.text']) expect(isConversationAttribute(k), k).toBe(true);
    for (const k of ['lk.room_id', 'gen_ai.usage.output_tokens', 'gen_ai.request.temperature', 'gen_ai.response.model', 'gen_ai.operation.name', 'lk.chatpii']) expect(isConversationAttribute(k), k).toBe(false);
  });
});
