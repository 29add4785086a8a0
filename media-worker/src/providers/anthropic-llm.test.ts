import { APIConnectionError, APIStatusError, initializeLogger, llm, type LLMMetrics } from '@livekit/agents';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { startFakeAnthropic, type FakeAnthropic } from '../../../test/support/fake-anthropic.ts';
import { AnthropicLLM, CONVERSATION_START, toAnthropicMessages, toAnthropicToolChoice } from './anthropic-llm.ts';

let fake: FakeAnthropic;

/** The error event's payload (the type itself is not exported by agents). */
type LLMErrorEvent = { error: Error; recoverable: boolean };

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'error' });
  fake = await startFakeAnthropic();
});
afterAll(async () => {
  await fake.close();
});

const noRetry = { maxRetry: 0, retryIntervalMs: 10, timeoutMs: 5000 };
const oneRetry = { maxRetry: 1, retryIntervalMs: 10, timeoutMs: 5000 };

function model(): AnthropicLLM {
  return new AnthropicLLM({ apiKey: 'sk-ant-test', baseURL: fake.url, model: 'claude-test', temperature: 0.3, maxTokens: 300 });
}

const weather = llm.tool({
  description: 'Current weather in a city',
  parameters: z.object({ city: z.string().describe('City name') }),
  execute: async () => 'sunny',
});

describe('AnthropicLLM', () => {
  it('streams text with the system prompt apart, the key and version headers, and usage in the metrics', async () => {
    fake.setResponder(() => ({ text: 'Sure, I can help with that.', usage: { input_tokens: 40, output_tokens: 0, cache_read_input_tokens: 10 } }));
    const chatCtx = llm.ChatContext.empty();
    chatCtx.addMessage({ role: 'system', content: 'You are a receptionist.' });
    chatCtx.addMessage({ role: 'user', content: 'Can you help me?' });
    const m = model();
    const metrics: LLMMetrics[] = [];
    m.on('metrics_collected', (x) => metrics.push(x));
    const chunks: llm.ChatChunk[] = [];
    for await (const chunk of m.chat({ chatCtx, connOptions: noRetry })) chunks.push(chunk);

    expect(chunks.map((c) => c.delta?.content ?? '').join('')).toBe('Sure, I can help with that.');
    expect(chunks.filter((c) => c.delta?.content).length).toBeGreaterThan(1);
    const req = fake.requests.at(-1)!;
    // SDK 1.x sends the key as a bearer token (older versions used x-api-key).
    expect(req.headers['x-api-key'] ?? req.headers.authorization?.replace(/^Bearer /, '')).toBe('sk-ant-test');
    expect(req.headers['anthropic-version']).toBeTruthy();
    expect(req.body).toMatchObject({
      model: 'claude-test',
      max_tokens: 300,
      temperature: 0.3,
      stream: true,
      system: 'You are a receptionist.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Can you help me?' }] }],
    });
    expect(req.body.tools).toBeUndefined();
    await vi.waitFor(() => expect(metrics).toHaveLength(1));
    expect(metrics[0]).toMatchObject({ label: 'anthropic.LLM', promptTokens: 50, promptCachedTokens: 10, completionTokens: 6, totalTokens: 56 });
    expect(metrics[0]!.ttftMs).toBeGreaterThanOrEqual(0);
    expect(metrics[0]!.metadata).toEqual({ modelProvider: 'anthropic', modelName: 'claude-test' });
  });

  it('sends tools as JSON schema and returns streamed tool calls as FunctionCalls', async () => {
    fake.setResponder(() => ({ text: 'Let me check.', toolCalls: [{ id: 'toolu_1', name: 'weather', input: { city: 'Paris' } }] }));
    const chatCtx = llm.ChatContext.empty();
    chatCtx.addMessage({ role: 'user', content: 'Weather in Paris?' });
    const result = await model()
      .chat({ chatCtx, toolCtx: { weather }, toolChoice: 'required', parallelToolCalls: false, connOptions: noRetry })
      .collect();
    expect(result.text).toBe('Let me check.');
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]).toMatchObject({ callId: 'toolu_1', name: 'weather' });
    expect(JSON.parse(result.toolCalls[0]!.args)).toEqual({ city: 'Paris' });
    const req = fake.requests.at(-1)!;
    expect(req.body.tools).toEqual([
      {
        name: 'weather',
        description: 'Current weather in a city',
        input_schema: expect.objectContaining({ type: 'object', properties: { city: expect.objectContaining({ type: 'string' }) }, required: ['city'] }),
      },
    ]);
    expect(req.body.tools![0]!.input_schema).not.toHaveProperty('$schema');
    expect(req.body.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
  });

  it('maps tool calls and results of earlier turns, and opens with a user turn', async () => {
    const chatCtx = llm.ChatContext.empty();
    chatCtx.addMessage({ role: 'system', content: 'Be brief.' });
    chatCtx.addMessage({ role: 'assistant', content: 'Hello, how can I help?' });
    chatCtx.addMessage({ role: 'user', content: 'Weather in Paris and Rome?' });
    chatCtx.insert([
      llm.FunctionCall.create({ callId: 'c1', name: 'weather', args: '{"city":"Paris"}', groupId: 'g' }),
      llm.FunctionCall.create({ callId: 'c2', name: 'weather', args: '{"city":"Rome"}', groupId: 'g' }),
      llm.FunctionCall.create({ callId: 'orphan', name: 'weather', args: '{}' }),
      llm.FunctionCallOutput.create({ callId: 'c1', output: 'sunny', isError: false }),
      llm.FunctionCallOutput.create({ callId: 'c2', output: 'timeout', isError: true }),
    ]);
    chatCtx.addMessage({ role: 'system', content: 'Knowledge: Rome is warm.' });
    chatCtx.addMessage({ role: 'user', content: 'And tomorrow?' });

    const { system, messages } = await toAnthropicMessages(chatCtx);
    expect(system).toBe('Be brief.\n\nKnowledge: Rome is warm.');
    expect(messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: CONVERSATION_START }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello, how can I help?' }] },
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'c1', name: 'weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'c2', name: 'weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'c1', content: 'sunny', is_error: false },
          { type: 'tool_result', tool_use_id: 'c2', content: 'timeout', is_error: true },
          { type: 'text', text: 'And tomorrow?' },
        ],
      },
    ]);
  });

  it('maps tool choices', () => {
    expect(toAnthropicToolChoice(undefined, undefined)).toBeUndefined();
    expect(toAnthropicToolChoice('auto', undefined)).toEqual({ type: 'auto' });
    expect(toAnthropicToolChoice('none', false)).toEqual({ type: 'none' });
    expect(toAnthropicToolChoice({ type: 'function', function: { name: 'weather' } }, true)).toEqual({ type: 'tool', name: 'weather' });
  });

  it('retries a 529 overloaded answer and succeeds', async () => {
    const before = fake.requests.length;
    fake.setResponder((_req, i) => (i === before ? { httpError: { status: 529, type: 'overloaded_error' } } : { text: 'Back again.' }));
    const chatCtx = llm.ChatContext.empty();
    chatCtx.addMessage({ role: 'user', content: 'Hi' });
    const m = model();
    const errors: LLMErrorEvent[] = [];
    m.on('error', (e) => errors.push(e));
    const result = await m.chat({ chatCtx, connOptions: oneRetry }).collect();
    expect(result.text).toBe('Back again.');
    expect(fake.requests.length - before).toBe(2);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.recoverable).toBe(true);
    expect(errors[0]!.error).toBeInstanceOf(APIStatusError);
    expect((errors[0]!.error as APIStatusError).statusCode).toBe(529);
  });

  it('does not retry a 400, and keeps the status, body and request id', async () => {
    const before = fake.requests.length;
    fake.setResponder(() => ({ httpError: { status: 400, type: 'invalid_request_error', message: 'messages: bad' } }));
    const chatCtx = llm.ChatContext.empty();
    chatCtx.addMessage({ role: 'user', content: 'Hi' });
    const m = model();
    const errors: LLMErrorEvent[] = [];
    m.on('error', (e) => errors.push(e));
    const result = await m.chat({ chatCtx, connOptions: oneRetry }).collect();
    expect(result.text).toBe('');
    expect(fake.requests.length - before).toBe(1);
    expect(errors).toHaveLength(1);
    const error = errors[0]!.error as APIStatusError;
    expect(error).toBeInstanceOf(APIStatusError);
    expect(error.statusCode).toBe(400);
    expect(error.retryable).toBe(false);
    expect(error.requestId).toMatch(/^req_fake_/);
    expect(error.message).toBe('messages: bad');
  });

  it('does not retry an error in the middle of a reply (it would repeat what was said)', async () => {
    const before = fake.requests.length;
    fake.setResponder(() => ({ text: 'Half a', streamError: { type: 'overloaded_error', message: 'Overloaded' } }));
    const chatCtx = llm.ChatContext.empty();
    chatCtx.addMessage({ role: 'user', content: 'Hi' });
    const m = model();
    const errors: LLMErrorEvent[] = [];
    m.on('error', (e) => errors.push(e));
    const result = await m.chat({ chatCtx, connOptions: oneRetry }).collect();
    expect(result.text).toBe('Half a');
    expect(fake.requests.length - before).toBe(1);
    const error = errors[0]!.error as APIStatusError;
    expect(error.statusCode).toBe(529);
    expect(error.retryable).toBe(false);
  });

  it('maps a refused connection to a retryable APIConnectionError', async () => {
    const m = new AnthropicLLM({ apiKey: 'k', baseURL: 'http://127.0.0.1:1', model: 'claude-test' });
    const errors: LLMErrorEvent[] = [];
    m.on('error', (e) => errors.push(e));
    const chatCtx = llm.ChatContext.empty();
    chatCtx.addMessage({ role: 'user', content: 'Hi' });
    await m.chat({ chatCtx, connOptions: noRetry }).collect();
    expect(errors[0]!.error).toBeInstanceOf(APIConnectionError);
    expect((errors[0]!.error as APIConnectionError).retryable).toBe(true);
  });

  it('requires a key', () => {
    const saved = process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_API_KEY;
    try {
      expect(() => new AnthropicLLM({ apiKey: undefined })).toThrow(/API key is required/);
    } finally {
      if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved;
    }
  });
});
