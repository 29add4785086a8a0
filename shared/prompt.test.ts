import { describe, expect, it } from 'vitest';
import { effectiveSystemPrompt, interpolate, placeholders } from './prompt.ts';

describe('effectiveSystemPrompt', () => {
  it('prepends the job description as a # Role block', () => {
    expect(effectiveSystemPrompt('Receptionist of a dental clinic.', 'Be brief.')).toBe('# Role\nReceptionist of a dental clinic.\n\nBe brief.');
  });
  it('is just the role block when the model has no system prompt', () => {
    expect(effectiveSystemPrompt('Receptionist.', null)).toBe('# Role\nReceptionist.');
    expect(effectiveSystemPrompt('Receptionist.', '')).toBe('# Role\nReceptionist.');
  });
  it('is the system prompt when there is no job description', () => {
    expect(effectiveSystemPrompt(null, 'Be brief.')).toBe('Be brief.');
    expect(effectiveSystemPrompt('   ', 'Be brief.')).toBe('Be brief.');
  });
  it('is null when there is neither', () => {
    expect(effectiveSystemPrompt(null, null)).toBeNull();
    expect(effectiveSystemPrompt('', ' \n')).toBeNull();
  });
  it('keeps both texts verbatim, placeholders included', () => {
    expect(effectiveSystemPrompt(' Agent for {{company}} ', 'Hi {{name}}\n')).toBe('# Role\n Agent for {{company}} \n\nHi {{name}}\n');
  });
});

describe('interpolate', () => {
  it('replaces placeholders, with or without inner spaces', () => {
    expect(interpolate('Hello {{name}}, from {{ company }}.', { name: 'Ada', company: 'Acme' })).toEqual({ text: 'Hello Ada, from Acme.', missing: [] });
  });
  it('formats numbers, booleans and objects', () => {
    expect(interpolate('{{n}} {{b}} {{o}}', { n: 3.5, b: false, o: { a: 1 } }).text).toBe('3.5 false {"a":1}');
  });
  it('replaces missing variables with the empty string and reports them once', () => {
    expect(interpolate('Hi {{name}}! {{name}}, your order {{order_id}}.', { order_id: null })).toEqual({
      text: 'Hi ! , your order .',
      missing: ['name', 'order_id'],
    });
  });
  it('leaves malformed placeholders alone and does not re-scan values', () => {
    expect(interpolate('{{ 1x }} {name} {{a}}', { a: '{{a}}' }).text).toBe('{{ 1x }} {name} {{a}}');
  });
  it('ignores inherited properties', () => {
    expect(interpolate('{{toString}}', {})).toEqual({ text: '', missing: ['toString'] });
  });
  it('lists placeholders', () => {
    expect(placeholders('{{a}} {{ b }} {{a}}')).toEqual(['a', 'b']);
  });
});
