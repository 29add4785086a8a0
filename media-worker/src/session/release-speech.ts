// A call that has ended must not wait for its agent's speech to play.
//
// agents-js 1.9's room output holds each frame until the caller has subscribed to the agent's track
// (ParticipantAudioOutput.captureFrame awaits its startedFuture, with nothing else to wake it). A call that ends
// before that subscription (a stop while the session starts or the greeting is synthesized, a SIP caller hanging
// up while the bridge subscribes) leaves the greeting's forwarding parked on that wait for good. The session's close
// then waits for the current speech's playout (AgentSession.closeImpl, "wait any uninterruptible speech to
// finish") before it reaches AgentActivity.close, whose own fix for a dead room (cancelling the speech's tasks)
// never runs: the close hangs, the ended report waited out the call's bounded close (5 s, "session close is slow")
// and agents-js's 60 s ("AgentSession.close() timed out") held the job process after it.
//
// At the call's end, before the close, releaseSpeech does what the speech's own interruption watchdog would do 5 s
// later (SpeechHandle.startInterruptTimeout: its tasks cancelled, the speech done), bumps the output's interruption
// generation (clearBuffer), so a held frame is dropped, and releases the output's wait for a subscriber, which
// will never come. The members are private: like early-track.ts, the patch is pinned to the release it was
// checked against (assertReleaseSpeechTarget at the worker's start).
import type { voice } from '@livekit/agents';
import { PinnedReleaseError, installedAgentsVersion } from './agents-release.ts';

/** The @livekit/agents release whose AgentSession, SpeechHandle and ParticipantAudioOutput this was checked against. */
export const RELEASE_SPEECH_AGENTS_VERSION = '1.9.0';

export class ReleaseSpeechVersionError extends PinnedReleaseError {
  constructor(installed: string) {
    const check =
      "AgentSession.close still waits for the current speech's playout before closing its activity, and ParticipantAudioOutput.captureFrame still waits for startedFuture with nothing but the subscription to resolve it";
    super('release-speech.ts', RELEASE_SPEECH_AGENTS_VERSION, installed, check, 'RELEASE_SPEECH_AGENTS_VERSION');
  }
}

export function assertReleaseSpeechTarget(version = installedAgentsVersion()): void {
  if (version !== RELEASE_SPEECH_AGENTS_VERSION) throw new ReleaseSpeechVersionError(version);
}

/** The private state of agents-js 1.9.0 that the release touches. */
interface SpeechInternals {
  done(): boolean;
  _cancel(): unknown;
  _tasks: { cancel(): void }[];
  _markDone(): void;
}
interface SessionInternals {
  activity?: { currentSpeech?: SpeechInternals };
  _roomIO?: { participantAudioOutput?: { clearBuffer(): void; startedFuture: { done: boolean; resolve(): void } } };
}

/** The call has ended: its speech is done now, and the room output holds no frame for a subscriber. */
export function releaseSpeech(session: voice.AgentSession): void {
  const s = session as unknown as SessionInternals;
  const speech = s.activity?.currentSpeech;
  if (speech && !speech.done()) {
    speech._cancel();
    for (const task of speech._tasks) task.cancel();
  }
  const output = s._roomIO?.participantAudioOutput;
  if (output) {
    // First the generation (a frame released below is then dropped), then the wait.
    output.clearBuffer();
    if (!output.startedFuture.done) output.startedFuture.resolve();
  }
  if (speech && !speech.done()) speech._markDone();
}
