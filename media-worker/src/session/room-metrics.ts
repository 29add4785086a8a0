// Each completed turn's latency, published to the call's room so that any LiveKit client (the web SDK, the
// playground, LiveKit's own tools) can show it as it happens: one JSON message per turn, reliable, on the data
// topic `vap.metrics` (docs/decisions/028-web-sdk-and-widget.md). The agent's state and the transcripts
// already travel the LiveKit Agents way (`lk.agent.state` attribute, `lk.transcription` text streams).
import type { Room } from '@livekit/rtc-node';
import type { Logger } from '../../../shared/logger.ts';
import type { TurnReport } from './turn-metrics.ts';

export const METRICS_TOPIC = 'vap.metrics';

export function turnMetricsMessage(t: TurnReport): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ type: 'turn_metrics', ...t }));
}

/** Publishes one turn's figures; a room already closed or a failed send only logs (the call goes on). */
export async function publishTurnMetrics(room: Room, t: TurnReport, log: Pick<Logger, 'debug'>): Promise<void> {
  const local = room.localParticipant;
  if (!room.isConnected || !local) return;
  try {
    await local.publishData(turnMetricsMessage(t), { reliable: true, topic: METRICS_TOPIC });
  } catch (err) {
    log.debug({ err, turn: t.turn }, 'turn metrics not published');
  }
}
