// Which utterances count as backchannels (they do not interrupt the agent with ignore_backchannels).
import { describe, expect, it } from 'vitest';
import { isBackchannel, mayBeBackchannel } from './backchannel.ts';

describe('isBackchannel', () => {
  it.each(['mm-hm', 'Mm hmm.', 'mhm', 'uh-huh', 'Yeah.', 'yeah yeah', 'Okay', 'OK.', 'right', 'Sure!', 'I see', 'got it', 'oh, okay', 'Yes, right, I see.', 'mm, that makes sense', 'all right'])(
    '%s is a backchannel',
    (text) => expect(isBackchannel(text)).toBe(true),
  );
  it.each(['wait, stop', 'No, actually', 'no', 'stop', 'yeah but wait', 'okay so what about Friday', 'hold on', 'I see what you mean but', 'sorry?', 'what'])(
    '%s takes the turn',
    (text) => expect(isBackchannel(text)).toBe(false),
  );
  it('is not an empty or a long utterance', () => {
    expect(isBackchannel('')).toBe(false);
    expect(isBackchannel(' , . ')).toBe(false);
    expect(isBackchannel('yeah yeah yeah yeah yeah yeah yeah')).toBe(false);
  });
});

describe('mayBeBackchannel (an interim, read word by word)', () => {
  it.each(['I', 'uh', 'yeah, I', 'that makes', 'oh I', 'I see', 'okay'])('%s may still be a backchannel', (text) => {
    expect(mayBeBackchannel(text)).toBe(true);
  });
  it.each(['I want', 'stop', 'wait', 'yeah but', 'I see what', 'what'])('%s is not one', (text) => {
    expect(mayBeBackchannel(text)).toBe(false);
  });
  it('an opening alone is not a backchannel once final', () => {
    expect(isBackchannel('I')).toBe(false);
    expect(isBackchannel('that makes')).toBe(false);
  });
});
