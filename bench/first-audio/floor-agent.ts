// The floor of bench:firstaudio: an agents-js job that does nothing but join the room and publish a prepared WAV
// (the agent's greeting, synthesized once by the benchmark) as soon as it has joined. It is dispatched exactly
// as the media worker is (the control plane's POST /v1/calls/web, the same agent name), so POST -> first audio
// here is what the control plane, LiveKit's dispatch, a prewarmed job process, the room join and the audio path
// cost with no agent behind them. FLOOR_WAV names the file. With standby agents on (STANDBY_AGENTS), it stands by
// as the media worker's jobs do (media-worker/src/standby.ts): joined and waiting, it plays as soon as a call comes,
// in its own room (a web call) or in the phone call's, which it joins from there.
import { type JobContext, type JobProcess, defineAgent, log } from '@livekit/agents';
import { AudioFrame, AudioSource, LocalAudioTrack, type Room, RoomEvent, TrackPublishOptions, TrackSource } from '@livekit/rtc-node';
import { readWav } from '../../test/support/speech.ts';
import { StartTimeline } from '../../media-worker/src/session/start-timeline.ts';
import { callIdFromMetadata } from '../../media-worker/src/call/job-metadata.ts';
import { joinCallRoom, standByInRoom, standbyRoomOf } from '../../media-worker/src/call/standby.ts';
import { loadWorkerConfig } from '../../media-worker/src/config.ts';
import { InternalApiClient } from '../../shared/internal-api.ts';
import { createLogger } from '../../shared/logger.ts';

/** agents-js's room output publishes 20 ms frames from a queue of 200 ms; the floor does the same. */
const QUEUE_MS = 200;

export default defineAgent({
  prewarm: async (proc: JobProcess) => {
    proc.userData.pcm = readWav(process.env.FLOOR_WAV!);
  },
  entry: async (ctx: JobContext) => {
    let callId = callIdFromMetadata(ctx.job.metadata, ctx.job.room?.metadata);
    const standbyRoom = standbyRoomOf(ctx.job.metadata);
    // A phone call's room, which the standby agent joins from its own (as the media worker's does).
    let join: { room_name: string; token: string } | undefined;
    if (standbyRoom) {
      const cfg = loadWorkerConfig();
      const api = new InternalApiClient({ baseUrl: cfg.controlPlaneUrl, token: cfg.workerToken, workerId: ctx.workerId });
      const call = await standByInRoom(ctx, api, standbyRoom, { logger: createLogger('floor-agent') });
      if (!call) {
        ctx.shutdown('standby released');
        return;
      }
      callId = call.call_id;
      join = call.join;
    }
    // As the media worker's jobs do (worker.ts): the process's exit, which the benchmark reads as the job freed.
    process.once('exit', () => createLogger('floor-agent').info({ job_id: ctx.job.id, call_id: callId }, 'job process exit'));
    const timeline = new StartTimeline();
    void timeline.closed.then((t) => log().info({ call_id: callId, call_type: 'floor', ...t }, 'call start timeline'));
    const pcm = ctx.proc.userData.pcm as ReturnType<typeof readWav>;
    let room: Room = ctx.room;
    if (join) {
      room = await joinCallRoom(ctx, join);
    } else {
      await ctx.connect();
    }
    timeline.mark('connected');
    // Noted, not waited for: the floor plays at once, where the agent waits for the caller's subscription (on a
    // phone call, what it plays before the bridge subscribes is lost: the floor is the first frame after).
    room.once(RoomEvent.LocalTrackSubscribed, () => timeline.mark('audio_subscribed'));
    const source = new AudioSource(pcm.sampleRate, 1, QUEUE_MS);
    const track = LocalAudioTrack.createAudioTrack('agent', source);
    await room.localParticipant!.publishTrack(track, new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
    timeline.mark('published');
    const frame = pcm.sampleRate / 50;
    let closed = false;
    const done = new Promise<void>((resolve) => room.once(RoomEvent.Disconnected, () => ((closed = true), resolve())));
    for (let at = 0; at < pcm.samples.length && !closed; at += frame) {
      const data = new Int16Array(frame);
      data.set(pcm.samples.subarray(at, Math.min(at + frame, pcm.samples.length)));
      await source.captureFrame(new AudioFrame(data, pcm.sampleRate, 1, frame));
      timeline.mark('first_audio');
    }
    await done;
    timeline.finish();
    ctx.shutdown('room closed');
  },
});
