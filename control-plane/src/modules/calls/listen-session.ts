// One open listen stream (listen-stream.ts accepted it): a text `start` message with the format, then a binary frame
// of stereo PCM every 20 ms (listen-mixer.ts) from a hidden seat in the call's room (listen-room.ts), and a text `end`
// message and a close when the call ends, the stream's time is up, the client reads too slowly or sends anything, or
// the process stops. The room is left on every one of those ways out.
import type { WebSocket } from 'ws';
import type { Services } from '../../services.ts';
import { CHANNEL_MAP, STREAM_CHANNELS, STREAM_FRAME_MS, STREAM_SAMPLE_RATE, StereoMixer } from './listen-mixer.ts';
import { joinAsListener, type ListenSeat } from './listen-room.ts';
import { callInProgress } from './queries-listen.ts';
import { FrameGate } from './listen-backpressure.ts';

/** Above this much unsent data (about 1 s of audio) frames are dropped, not queued. */
export const SEND_BUFFER_LIMIT = 64 * 1024;
/** A client that keeps its buffer over the limit this long is closed (too_slow). */
const TOO_SLOW_MS = 10_000;
/** After a stall of the process, at most this many late frames are sent at once; older ones are skipped. */
const CATCH_UP_FRAMES = 5;
/** How often the call's status is read (a call can end while its room lingers). */
const WATCH_MS = 3_000;

export type EndReason = 'call_ended' | 'client_closed' | 'time_limit' | 'too_slow' | 'protocol_error' | 'shutdown' | 'error';
const CLOSE_CODES: Record<EndReason, number> = {
  call_ended: 1000,
  time_limit: 1000,
  client_closed: 1000,
  too_slow: 1008,
  protocol_error: 1008,
  shutdown: 1001,
  error: 1011,
};

export interface SessionOptions {
  services: Services;
  ws: WebSocket;
  callId: string;
  room: string;
  identity: string;
}

export interface ListenSession {
  /** Ends the stream (if it has not ended) and resolves once its seat has left the room. */
  end(reason: EndReason): Promise<void>;
  /** Resolves when the stream has ended and left the room, whatever ended it. */
  readonly done: Promise<void>;
}

export function startListenSession(opts: SessionOptions): ListenSession {
  const { services, ws, callId } = opts;
  const { metrics, log, config } = services;
  const mixer = new StereoMixer();
  let ended = false;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));

  const gate = new FrameGate(SEND_BUFFER_LIMIT, TOO_SLOW_MS);
  const send = (frame: Buffer) => {
    if (ws.readyState !== ws.OPEN) return;
    const result = gate.offer(ws, frame);
    if (result !== 'sent') metrics.listenStreamDropped.inc();
    if (result === 'too_slow') void end('too_slow');
  };

  // Frames by the clock, not by the timer's count: a late timer sends what is due (a few), so the pace holds.
  const t0 = performance.now();
  let sent = 0;
  const ticker = setInterval(() => {
    const due = Math.floor((performance.now() - t0) / STREAM_FRAME_MS);
    if (due - sent > CATCH_UP_FRAMES) sent = due - CATCH_UP_FRAMES;
    while (sent < due && !ended) {
      sent++;
      send(mixer.frame());
    }
  }, STREAM_FRAME_MS);
  const watch = setInterval(() => {
    void callInProgress(services.sql, callId)
      .then((live) => {
        if (!live) void end('call_ended');
      })
      .catch(() => {});
  }, WATCH_MS);
  const limit = setTimeout(() => void end('time_limit'), config.LISTEN_STREAM_MAX_SECONDS * 1000);

  const joining = new AbortController();
  const seat: Promise<ListenSeat | null> = services.livekit
    .listenToken(opts.room, opts.identity, config.LISTEN_TOKEN_TTL_SECONDS)
    .then((token) => joinAsListener({ url: services.livekit.serverUrl, token, callId, mixer, onGone: () => void end('call_ended'), signal: joining.signal }))
    .catch(async (err: unknown) => {
      if (ended) return null;
      // A room deleted while the stream joins can leave rtc-node's connect waiting until the join's bound: that is
      // the call's end, not a failure of the stream.
      const gone = !(await services.livekit.roomExists(opts.room).catch(() => true));
      if (!gone) log.warn({ err: (err as Error).message, call_id: callId }, 'listen stream could not join the room');
      void end(gone ? 'call_ended' : 'error');
      return null;
    });

  async function end(reason: EndReason): Promise<void> {
    if (ended) return done;
    ended = true;
    clearInterval(ticker);
    clearInterval(watch);
    clearTimeout(limit);
    joining.abort();
    if (ws.readyState === ws.OPEN) {
      ws.send(JSON.stringify({ type: 'end', reason }));
      ws.close(CLOSE_CODES[reason], reason);
    }
    metrics.listenStreamEnds.inc({ reason });
    log.info({ call_id: callId, identity: opts.identity, reason }, 'listen stream ended');
    try {
      await (await seat)?.leave();
    } finally {
      finish();
    }
  }

  // A client has nothing to say: any message ends the stream (one over the size bound makes ws close it with 1009).
  ws.on('message', () => void end('protocol_error'));
  ws.on('error', () => void end('protocol_error'));
  ws.on('close', () => void end('client_closed'));
  ws.send(
    JSON.stringify({
      type: 'start',
      call_id: callId,
      sample_rate: STREAM_SAMPLE_RATE,
      channels: STREAM_CHANNELS,
      channel_map: CHANNEL_MAP,
      encoding: 'pcm_s16le',
      frame_ms: STREAM_FRAME_MS,
    }),
  );
  return { end, done };
}
