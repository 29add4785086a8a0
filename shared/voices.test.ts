import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { languageMatches, listVoices, STT_DEFAULT_MODEL, STT_PROVIDERS, transcriberProblems, TTS_DEFAULTS, TTS_PROVIDERS, ttsProblems, VOICES } from './voices.ts';

describe('voice catalogue', () => {
  it('has unique voice ids per provider', () => {
    const keys = VOICES.map((v) => `${v.provider}/${v.voice_id}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('every default is valid', () => {
    for (const p of TTS_PROVIDERS) expect(ttsProblems({ provider: p, ...TTS_DEFAULTS[p] }), p).toEqual([]);
    for (const p of STT_PROVIDERS) expect(transcriberProblems({ provider: p, model: STT_DEFAULT_MODEL[p], language: 'en-US' }), p).toEqual([]);
  });

  it('lists only espeak-ng voices that the installed espeak-ng has', () => {
    const out = execFileSync('espeak-ng', ['--voices'], { encoding: 'utf8' });
    const installed = new Set(out.split('\n').slice(1).map((l) => l.trim().split(/\s+/)[1]).filter(Boolean));
    for (const v of listVoices({ provider: 'local' }).filter((v) => v.models.includes('espeak-ng'))) {
      expect(installed.has(v.voice_id), v.voice_id).toBe(true);
    }
  });

  it('matches languages by prefix at a - boundary', () => {
    expect(languageMatches('en', 'en-US')).toBe(true);
    expect(languageMatches('en-us', 'en-US')).toBe(true);
    expect(languageMatches('en-GB', 'en-US')).toBe(false);
    expect(languageMatches('e', 'en')).toBe(false);
  });

  it('filters by provider and language', () => {
    const local = listVoices({ provider: 'local', language: 'en-GB' }).map((v) => v.voice_id);
    expect(local).toEqual(['en-gb', 'en-gb-scotland', 'en-gb-x-rp', 'en-029']);
    expect(listVoices({ language: 'de' }).some((v) => v.provider === 'openai')).toBe(true);
    expect(listVoices({ provider: 'deepgram', language: 'de' })).toEqual([]);
  });

  it('reports unknown models and voices at their field', () => {
    expect(ttsProblems({ provider: 'openai', model: 'tts-1', voice_id: 'ballad' })).toEqual([
      expect.objectContaining({ loc: ['voice_id'], type: 'unknown_voice' }),
    ]);
    expect(ttsProblems({ provider: 'local', model: 'flite', voice_id: 'nope' }).map((p) => p.loc)).toEqual([['model'], ['voice_id']]);
    expect(transcriberProblems({ provider: 'local', model: 'pocketsphinx', language: 'de-DE' })).toEqual([
      expect.objectContaining({ loc: ['language'], type: 'unsupported_language' }),
    ]);
  });
});
