// The warm transfer's plan of who hears whom (pure), its hold music, and its briefing's fallback.
import { describe, expect, it } from 'vitest';
import { llm } from '@livekit/agents';
import { BRIEFING_PROMPT, FALLBACK_BRIEFING, briefing, holdMusic, subscriptionPlan, type SubscriptionChange, type TransferTracks } from './warm-transfer.ts';

const who = { caller: 'sip_+15550100199', human: 'transfer-1' };
const tracks: TransferTracks = { voice: 'TR_voice', hold: 'TR_hold', caller: ['TR_caller'], human: ['TR_human'] };

/** What `identity` ends up subscribed to (true) or not (false) among the tracks a plan names. */
function hears(plan: SubscriptionChange[], identity: string): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const c of plan) if (c.identity === identity) for (const sid of c.trackSids) out[sid] = c.subscribe;
  return out;
}

describe('subscriptionPlan', () => {
  it('holding: the caller hears only the music; the ringing person hears neither the caller nor the music', () => {
    const plan = subscriptionPlan('holding', who, tracks);
    expect(hears(plan, who.caller)).toEqual({ TR_voice: false, TR_hold: true, TR_human: false });
    expect(hears(plan, who.human)).toEqual({ TR_caller: false, TR_hold: false, TR_voice: false });
  });

  it("briefing: the person hears the agent's voice, the caller still only the music", () => {
    const plan = subscriptionPlan('briefing', who, tracks);
    expect(hears(plan, who.caller)).toEqual({ TR_voice: false, TR_hold: true, TR_human: false });
    expect(hears(plan, who.human)).toEqual({ TR_caller: false, TR_hold: false, TR_voice: true });
  });

  it('joined: caller and person hear each other, and neither the agent nor the music', () => {
    const plan = subscriptionPlan('joined', who, tracks);
    expect(hears(plan, who.caller)).toEqual({ TR_voice: false, TR_hold: false, TR_human: true });
    expect(hears(plan, who.human)).toEqual({ TR_voice: false, TR_hold: false, TR_caller: true });
  });

  it('restored: the caller hears the agent again', () => {
    expect(subscriptionPlan('restored', { caller: who.caller, human: null }, tracks)).toEqual([{ identity: who.caller, trackSids: ['TR_voice'], subscribe: true }]);
  });

  it('before the person is in the room, or before a track exists, nothing is asked about it', () => {
    const plan = subscriptionPlan('holding', { caller: who.caller, human: null }, { voice: 'TR_voice', hold: null, caller: ['TR_caller'], human: [] });
    expect(plan).toEqual([{ identity: who.caller, trackSids: ['TR_voice'], subscribe: false }]);
    expect(plan.every((c) => c.trackSids.length > 0)).toBe(true);
  });
});

describe('holdMusic', () => {
  it('is a loop of notes as loud as speech on a phone line, with quiet between them (music, not a steady tone)', () => {
    const loop = holdMusic(8000);
    expect(loop.length).toBe(8 * 3200);
    const peak = loop.reduce((m, s) => Math.max(m, Math.abs(s)), 0);
    expect(peak).toBeGreaterThan(6000);
    expect(peak).toBeLessThan(16000);
    // Each note starts loud and decays: the envelope at its end is a fraction of its start.
    const rms = (from: number, n: number) => Math.sqrt(loop.subarray(from, from + n).reduce((a, s) => a + s * s, 0) / n);
    expect(rms(3200 - 400, 400)).toBeLessThan(rms(80, 400) / 2);
    // Different notes: zero crossings per note differ (pitches change).
    const crossings = (from: number) => {
      let n = 0;
      for (let i = from + 1; i < from + 3200; i++) if (loop[i - 1]! < 0 !== loop[i]! < 0) n++;
      return n;
    };
    expect(new Set([0, 1, 2, 3].map((k) => Math.round(crossings(k * 3200) / 20))).size).toBeGreaterThan(2);
  });
});

describe('briefing', () => {
  it("is one completion over the conversation with the briefing prompt; the model's failure says a fixed sentence", async () => {
    const seen: llm.ChatContext[] = [];
    const model = {
      chat: ({ chatCtx }: { chatCtx: llm.ChatContext }) => {
        seen.push(chatCtx);
        return { collect: async () => ({ text: ' Hello, Ada needs a new appointment. ' }), close: () => {} };
      },
    } as unknown as llm.LLM;
    const history = llm.ChatContext.empty();
    history.addMessage({ role: 'assistant', content: 'Acme Dental, how can I help?' });
    history.addMessage({ role: 'user', content: 'This is Ada, I need a new appointment, can I talk to someone?' });
    expect(await briefing(model, history)).toBe('Hello, Ada needs a new appointment.');
    const items = seen[0]!.items as llm.ChatMessage[];
    expect(items[0]!.textContent).toBe(BRIEFING_PROMPT);
    expect(items[1]!.textContent).toContain('Caller: This is Ada, I need a new appointment');

    const broken = { chat: () => ({ collect: async () => Promise.reject(new Error('down')), close: () => {} }) } as unknown as llm.LLM;
    expect(await briefing(broken, history)).toBe(FALLBACK_BRIEFING);
  });
});
