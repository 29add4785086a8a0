// The OpenAPI examples of agents, models, tools and voices are valid instances of their schemas, and are
// accepted by the API itself (request examples) where they need no ids.
import { describe, expect, it } from 'vitest';
import type { TSchema } from '@sinclair/typebox';
import { bodyAjv } from '../../http/validation.ts';
import { Agent, CreateAgent, UpdateAgent } from '../../../../schemas/agents.ts';
import { CreateLlmModel, LlmModel, UpdateLlmModel } from '../../../../schemas/models.ts';
import { CreateTool, Tool, ToolWithSecret, UpdateTool } from '../../../../schemas/tools.ts';
import { Voice } from '../../../../schemas/voices.ts';
import { transcriberProblems, ttsProblems, TTS_DEFAULTS, findVoice } from '../../../../shared/voices.ts';

const schemas: Record<string, TSchema> = { Agent, CreateAgent, UpdateAgent, LlmModel, CreateLlmModel, UpdateLlmModel, Tool, ToolWithSecret, CreateTool, UpdateTool, Voice };

describe('OpenAPI examples', () => {
  for (const [name, schema] of Object.entries(schemas)) {
    it(`${name} examples validate against the schema`, () => {
      const examples = (schema as { examples?: unknown[] }).examples ?? [];
      expect(examples.length, `${name} has examples`).toBeGreaterThan(0);
      const validate = bodyAjv.compile({ ...schema, $id: undefined });
      for (const ex of examples) {
        const copy = structuredClone(ex);
        expect(validate(copy), `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
      }
    });
  }

  it('the speech settings of the examples are in the catalogue', () => {
    const ex = (Agent as { examples: { transcriber: never; tts: never }[] }).examples[0]!;
    expect(transcriberProblems(ex.transcriber)).toEqual([]);
    expect(ttsProblems(ex.tts)).toEqual([]);
    expect(findVoice('elevenlabs', '21m00Tcm4TlvDq8ikWAM')).toBeDefined();
    expect(TTS_DEFAULTS.local.voice_id).toBe('en-us');
  });
});
