// A call's middle step in the worker: while the session talks, what the room adds to it (keypad presses on a
// phone leg, the agent's background sound), until the call ends.
import { voice } from '@livekit/agents';
import { ParticipantKind, RoomEvent } from '@livekit/rtc-node';
import { ambientFrames, isAmbientSound } from '../session/background.ts';
import { KeypadCollector } from '../session/keypad.ts';
import type { StartedCall } from './start.ts';
import { watchSupervision } from './supervision-channel.ts';
import { roomPersonHearing } from './supervisor-voice.ts';

export async function runCall(started: StartedCall): Promise<void> {
  const { call, room, logger } = started;
  const config = call.config;
  // Keypad input on a phone leg: one user turn per entry (keypad.ts; the log counts the digits, never shows them).
  const keypad = new KeypadCollector({
    logger,
    onTurn: (pressed) => {
      if (call.endReason) return;
      call.session.generateReply({ userInput: `The caller pressed ${pressed.split('').join(' ')} on the keypad.` });
    },
  });
  room.on(RoomEvent.DtmfReceived, (_code, digit, from) => {
    if (from?.kind !== ParticipantKind.SIP) return;
    keypad.press(digit);
  });

  if (isAmbientSound(config.agent.background_sound)) {
    const player = new voice.BackgroundAudioPlayer({ ambientSound: { source: ambientFrames(config.agent.background_sound), volume: 0.6 } });
    await player.start({ room, agentSession: call.session }).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'background sound failed'));
  }

  // A supervisor's actions (say, whisper, mute, takeover), nudged by the control plane through the room; a person
  // who takes the call over is heard from their microphone in the room.
  call.supervision.hearPerson = roomPersonHearing(room, call, logger);
  const offSupervision = watchSupervision({ room, callId: config.call.id, api: started.api, supervision: call.supervision, logger });
  await call.ended;
  offSupervision();
  call.supervision.close();
}
