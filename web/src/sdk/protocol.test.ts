// The SDK's reading of the room and of API refusals, without a browser (the browser tests cover the rest).
import { describe, expect, it } from 'vitest';
import { callStateFor, isFinalSegment, parseCallFailure, parseMetrics } from './protocol.ts';
import { errorFromMedia, errorFromResponse } from './errors.ts';

const bytes = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));

describe('agent state', () => {
  it('maps agents-js states to call states', () => {
    expect(['initializing', 'idle', 'listening', 'thinking', 'speaking', undefined, 'new'].map(callStateFor)).toEqual([
      'connecting',
      'listening',
      'listening',
      'thinking',
      'speaking',
      'connecting',
      'connecting',
    ]);
  });
});

describe('vap.metrics payloads', () => {
  it('reads a turn, with nulls for what the turn did not measure', () => {
    const m = parseMetrics(bytes({ type: 'turn_metrics', turn: 2, eou_delay_ms: 310.5, llm_ttft_ms: 120, tts_ttfb_ms: null, e2e_latency_ms: 900 }));
    expect(m).toEqual({ turn: 2, eou_delay_ms: 310.5, llm_ttft_ms: 120, tts_ttfb_ms: null, e2e_latency_ms: 900 });
  });

  it('ignores other messages, bad JSON and negative figures', () => {
    expect(parseMetrics(bytes('not json'))).toBeNull();
    expect(parseMetrics(bytes({ type: 'other', turn: 1 }))).toBeNull();
    expect(parseMetrics(bytes({ type: 'turn_metrics' }))).toBeNull();
    expect(parseMetrics(bytes({ type: 'turn_metrics', turn: 1, eou_delay_ms: -1 }))?.eou_delay_ms).toBeNull();
  });
});

describe('transcription segments', () => {
  it("the agent's delta stream is final when it closes; the caller's only with lk.transcription_final", () => {
    expect(isFinalSegment('agent', { 'lk.transcription_final': 'false' })).toBe(true);
    expect(isFinalSegment('user', { 'lk.transcription_final': 'false' })).toBe(false);
    expect(isFinalSegment('user', { 'lk.transcription_final': 'true' })).toBe(true);
    expect(isFinalSegment('user', undefined)).toBe(false);
  });
});

describe('errors', () => {
  it('maps the API refusals of POST /v1/calls/web to codes', () => {
    const code = (status: number, body: unknown) => errorFromResponse(status, body).code;
    expect(code(401, { type: 'unauthorized', detail: 'Invalid or revoked API key' })).toBe('key_rejected');
    expect(code(403, { type: 'forbidden', detail: 'Origin is not allowed for this publishable key' })).toBe('origin_not_allowed');
    expect(code(403, { type: 'forbidden', detail: 'This publishable key lacks the "calls:web" scope' })).toBe('key_rejected');
    expect(code(429, { type: 'rate_limited', reason: 'daily_cap' })).toBe('daily_cap_reached');
    expect(code(429, { type: 'rate_limited', reason: 'concurrency' })).toBe('concurrency_limit');
    expect(code(429, { type: 'rate_limited', reason: 'publishable_concurrency' })).toBe('concurrency_limit');
    expect(code(403, { type: 'forbidden', detail: "This publishable key may not set variables.x; add them to the key's allowed_overrides" })).toBe('key_rejected');
    expect(code(429, { type: 'rate_limited', retry_after_seconds: 3 })).toBe('unknown');
    expect(code(422, { detail: [] })).toBe('agent_unavailable');
    expect(code(503, null)).toBe('agent_unavailable');
    expect(code(500, 'oops')).toBe('unknown');
    expect(errorFromResponse(401, { detail: 'Invalid or revoked API key' }).message).toContain('Invalid or revoked API key');
    expect(errorFromResponse(429, { reason: 'daily_cap', detail: 'Daily call limit of 5 reached' }).status).toBe(429);
  });

  it('maps microphone failures by DOMException name', () => {
    expect(errorFromMedia({ name: 'NotAllowedError' }).code).toBe('permission_denied');
    expect(errorFromMedia({ name: 'NotFoundError' }).code).toBe('no_microphone');
    expect(errorFromMedia(new Error('x')).code).toBe('unknown');
  });
});

describe('parseCallFailure', () => {
  it('reads the failure the control plane writes into the room metadata', () => {
    const metadata = JSON.stringify({ call_id: 'c1', error: { code: 'configuration_error', reason: 'provider_key_missing', message: 'no openai key: add it' } });
    expect(parseCallFailure(metadata)).toEqual({ reason: 'provider_key_missing', message: 'no openai key: add it' });
  });

  it('is null for an ordinary room, another error code, a message-less error or bad JSON', () => {
    expect(parseCallFailure(JSON.stringify({ call_id: 'c1', traceparent: '00-x' }))).toBeNull();
    expect(parseCallFailure(JSON.stringify({ error: { code: 'other', message: 'x' } }))).toBeNull();
    expect(parseCallFailure(JSON.stringify({ error: { code: 'configuration_error' } }))).toBeNull();
    expect(parseCallFailure('{nope')).toBeNull();
    expect(parseCallFailure(undefined)).toBeNull();
  });
});
