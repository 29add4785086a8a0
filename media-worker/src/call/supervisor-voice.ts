// The voice of a person who took the call over, in the call's room: their microphone track (the worker subscribes
// to every track, as LiveKit's default) transcribed by a second stream of the call's STT (session/supervisor-speech.ts).
// A realtime agent has no STT of its own: the agent's transcriber is built for the person, where its keys allow.
import type { stt as agentsStt } from '@livekit/agents';
import { AudioStream, type RemoteParticipant, type RemoteTrack, type RemoteTrackPublication, type Room, RoomEvent, TrackSource } from '@livekit/rtc-node';
import type { Logger } from '../../../shared/logger.ts';
import { createSTT, inputSampleRateFor } from '../providers/index.ts';
import type { CallSession } from '../session/call-session.ts';
import { type HearPerson, type SpeechTranscription, transcribeSpeech } from '../session/supervisor-speech.ts';

/** The STT for the person's words: the session's, or (a realtime agent) one built from the agent's transcriber. */
function personStt(call: CallSession, log: Logger): agentsStt.STT | null {
  if (call.session.stt) return call.session.stt;
  try {
    return createSTT(call.config.agent.transcriber, call.config.provider_keys);
  } catch (err) {
    log.warn({ err: (err as Error).message }, "takeover: no STT for the person's words");
    return null;
  }
}

/** Hears the person `identity` in `room` from their microphone's subscription until stopped. */
export function roomPersonHearing(room: Room, call: CallSession, log: Logger): HearPerson {
  return (identity, onFinal) => {
    const stt = personStt(call, log);
    let current: SpeechTranscription | null = null;
    const attach = (track: RemoteTrack, pub: RemoteTrackPublication, p: RemoteParticipant) => {
      if (!stt || current || p.identity !== identity || pub.source !== TrackSource.SOURCE_MICROPHONE) return;
      const audio = new AudioStream(track, { sampleRate: inputSampleRateFor(call.config.agent.transcriber.provider), numChannels: 1 });
      current = transcribeSpeech({ stt, vad: call.session.vad ?? null, audio, onFinal, log });
      log.info({ identity, stt: stt.label }, "takeover: transcribing the person's microphone");
    };
    // Unpublished (a browser that stopped its microphone) and published again: a new stream for the new track.
    const detach = (_track: RemoteTrack, pub: RemoteTrackPublication, p: RemoteParticipant) => {
      if (p.identity !== identity || pub.source !== TrackSource.SOURCE_MICROPHONE || !current) return;
      void current.stop();
      current = null;
    };
    room.on(RoomEvent.TrackSubscribed, attach);
    room.on(RoomEvent.TrackUnsubscribed, detach);
    const present = room.remoteParticipants.get(identity);
    for (const pub of present?.trackPublications.values() ?? []) if (pub.track) attach(pub.track, pub, present!);
    return {
      async stop(waitMs) {
        room.off(RoomEvent.TrackSubscribed, attach);
        room.off(RoomEvent.TrackUnsubscribed, detach);
        const last = current;
        current = null;
        await last?.stop(waitMs);
      },
    };
  };
}
