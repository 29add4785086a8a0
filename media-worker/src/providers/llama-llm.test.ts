// No GGUF weights can be had here: these tests cover what needs none (file checks, the mapping of the chat
// context and tools, and a broken file reported as a final error after the prebuilt runtime loaded).
import { APIError, initializeLogger, llm } from '@livekit/agents';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LlamaLLM, checkGgufFile, toLlamaChatHistory, toLlamaFunctions } from './llama-llm.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'vap-llama-'));
beforeAll(() => {
  initializeLogger({ pretty: false, level: 'error' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('LlamaLLM', () => {
  it('fails clearly at construction without a GGUF file', () => {
    expect(() => new LlamaLLM({ modelPath: path.join(dir, 'missing.gguf') })).toThrow(/LLM model file not found: .*missing\.gguf \(set LLM_MODEL_PATH/);
    const text = path.join(dir, 'notes.gguf');
    writeFileSync(text, 'hello');
    expect(() => checkGgufFile(text)).toThrow(/not GGUF/);
    expect(() => new LlamaLLM({ modelPath: dir })).toThrow(/not a file/);
  });

  it('maps the chat context: system, merged user turns, assistant text with completed tool calls', () => {
    const chatCtx = llm.ChatContext.empty();
    chatCtx.addMessage({ role: 'system', content: 'You book tables.' });
    chatCtx.addMessage({ role: 'assistant', content: 'Hello!' });
    chatCtx.addMessage({ role: 'user', content: 'A table for two' });
    chatCtx.addMessage({ role: 'user', content: 'at eight' });
    chatCtx.insert([
      llm.FunctionCall.create({ callId: 'c1', name: 'book', args: '{"people":2,"time":"20:00"}' }),
      llm.FunctionCall.create({ callId: 'c2', name: 'never_answered', args: '{}' }),
      llm.FunctionCallOutput.create({ callId: 'c1', output: 'booked', isError: false }),
    ]);
    chatCtx.addMessage({ role: 'assistant', content: 'Done.' });
    expect(toLlamaChatHistory(chatCtx)).toEqual([
      { type: 'system', text: 'You book tables.' },
      { type: 'model', response: ['Hello!'] },
      { type: 'user', text: 'A table for two\nat eight' },
      { type: 'model', response: [{ type: 'functionCall', name: 'book', params: { people: 2, time: '20:00' }, result: 'booked' }, 'Done.'] },
    ]);
  });

  it('offers tools as functions with a JSON schema', () => {
    const book = llm.tool({ description: 'Book a table', parameters: z.object({ people: z.number() }), execute: async () => 'ok' });
    const functions = toLlamaFunctions(new llm.ToolContext({ book }));
    expect(Object.keys(functions!)).toEqual(['book']);
    expect(functions!.book!.description).toBe('Book a table');
    expect(functions!.book!.params).toMatchObject({ type: 'object', properties: { people: { type: 'number' } } });
    expect(functions!.book!.params).not.toHaveProperty('$schema');
    expect(toLlamaFunctions(undefined)).toBeUndefined();
  });

  it('reports a broken model file as a final error, with the prebuilt runtime and no download', async () => {
    const broken = path.join(dir, 'broken.gguf');
    writeFileSync(broken, Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(64)]));
    const model = new LlamaLLM({ modelPath: broken });
    const errors: { error: Error; recoverable: boolean }[] = [];
    model.on('error', (e) => errors.push(e));
    const chatCtx = llm.ChatContext.empty();
    chatCtx.addMessage({ role: 'user', content: 'Hi' });
    const result = await model.chat({ chatCtx }).collect();
    expect(result.text).toBe('');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toBeInstanceOf(APIError);
    expect((errors[0]!.error as APIError).retryable).toBe(false);
    expect(errors[0]!.recoverable).toBe(false);
  });
});
