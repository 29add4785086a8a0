// A pause of the agent's room audio takes hold at once. agents-js's ParticipantAudioOutput pauses lazily:
// pause() closes a gate, and what the audio source holds (its 200 ms queue) is dropped only when the next frame
// reaches that gate, after the frame in flight has gone into the queue: up to one frame later (20 ms with
// output-frames.ts, 100 ms with the OpenAI plugin's frames). On a barge-in that is agent audio the caller hears
// over their own words, on top of the transport's floor (docs/benchmarks.md, "Turn-taking").
//
// The patch wraps ParticipantAudioOutput.prototype.pause: after agents-js's own pause it drops the queue with the
// bookkeeping agents-js does when the next frame comes (the dropped audio counts as discarded, and the playhead
// stops where the dropped queue began), so the agent's transcript and playback position read as before. When
// that next frame comes, the queue is empty and agents-js's own drop finds nothing more to count. A pause once
// the reply's last frame is in (agents-js is waiting for the source to play out) is left to agents-js: the
// source's last 200 ms play, as they always did, so a paused reply that resumes keeps its end.
//
// No public API reaches the output's source: like race-fix.ts, the patch is installed in one place (the
// CallSession constructor) and only on the agents-js release it was checked against (room_io/_output.js's
// pause() and captureFrame()); any other version fails loudly.
import { voice } from '@livekit/agents';
import type { AudioSource } from '@livekit/rtc-node';
import { PinnedReleaseError, installedAgentsVersion } from './agents-release.ts';

/** The @livekit/agents release whose ParticipantAudioOutput this patch was checked against. */
export const PROMPT_PAUSE_AGENTS_VERSION = '1.9.0';

export class PromptPauseVersionError extends PinnedReleaseError {
  constructor(installed: string) {
    const check = "ParticipantAudioOutput still drops its source's queue only when the next frame reaches the paused gate, and that the fields read here still mean the same";
    super('prompt-pause.ts', PROMPT_PAUSE_AGENTS_VERSION, installed, check, 'PROMPT_PAUSE_AGENTS_VERSION');
  }
}

export function assertPromptPauseTarget(version = installedAgentsVersion()): void {
  if (version !== PROMPT_PAUSE_AGENTS_VERSION) throw new PromptPauseVersionError(version);
}

/** The private state of agents-js 1.9.0's ParticipantAudioOutput that its own paused path uses. */
interface OutputInternals {
  audioSource: AudioSource;
  playbackEnabledFuture: { done: boolean };
  flushTask?: { done: boolean };
  sourcePushedDuration: number;
  sourceDiscardedDuration: number;
  reportRun(opts: { offset: number; endedAt: number; resumesAt?: number }): void;
}

/**
 * Drops what the source holds, as agents-js does when a frame reaches the paused gate. Returns the milliseconds
 * dropped (0: nothing held, or the reply's last frame is in and the source plays out).
 */
function dropQueued(out: OutputInternals): number {
  if (out.flushTask && !out.flushTask.done) return 0;
  const queued = out.audioSource.queuedDuration;
  if (queued <= 0) return 0;
  out.sourceDiscardedDuration += queued / 1000;
  out.reportRun({ offset: out.sourcePushedDuration * 1000 - queued, endedAt: Date.now(), resumesAt: out.sourcePushedDuration * 1000 });
  out.audioSource.clearQueue();
  return queued;
}

let installed = false;

/** Installs the patch (once per process; CallSession calls it before its AgentSession exists). */
export function installPromptPause(): void {
  if (installed) return;
  assertPromptPauseTarget();
  installed = true;
  const proto = voice.ParticipantAudioOutput.prototype as unknown as { pause: (this: OutputInternals) => void };
  const pause = proto.pause;
  proto.pause = function (this: OutputInternals) {
    const playing = this.playbackEnabledFuture.done;
    pause.call(this);
    if (playing) dropQueued(this);
  };
}

export const promptPauseInstalled = () => installed;
