// The worker's record of a voice test call, read back as a test's transcript and tool calls.
import { describe, expect, it } from 'vitest';
import { fromCallMessages } from './voice.ts';

describe('fromCallMessages', () => {
  it('keeps spoken messages, turns tool-call messages into tool calls, and unwraps the framework-encoded answer', () => {
    const out = fromCallMessages([
      { role: 'agent', content: 'Hello.', started_at: '2026-01-01T00:00:00Z' },
      { role: 'user', content: 'Book Wednesday.' },
      { role: 'agent', content: '', tool_call: { name: 'book', arguments: '{"day":"Wednesday"}', output: '"{\\"booked\\":true}"', is_error: false } },
      { role: 'agent', content: '', tool_call: { name: 'raw', arguments: 'not json', output: 'plain', is_error: true } },
      { role: 'agent', content: '   ' },
    ]);
    expect(out.messages).toEqual([
      { role: 'agent', content: 'Hello.' },
      { role: 'user', content: 'Book Wednesday.' },
    ]);
    expect(out.toolCalls).toEqual([
      { tool: 'book', arguments: { day: 'Wednesday' }, output: '{"booked":true}', error: false, mocked: false },
      { tool: 'raw', arguments: 'not json', output: 'plain', error: true, mocked: false },
    ]);
  });
});
