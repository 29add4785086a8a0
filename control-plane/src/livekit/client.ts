// The control plane's side of LiveKit: rooms, explicit agent dispatch, SIP trunks and dispatch rules, and
// participant tokens (Twirp APIs through livekit-server-sdk).
import { AccessToken, AgentDispatchClient, RoomServiceClient, SipClient, TrackSource, WebhookReceiver } from 'livekit-server-sdk';
import type { Config } from '../config.ts';

export interface LiveKit {
  publicUrl: string;
  /** Where the control plane itself joins rooms (the worker-less announcer): the server's own URL, as ws(s). */
  serverUrl: string;
  agentName: string;
  rooms: RoomServiceClient;
  dispatch: AgentDispatchClient;
  /** SIP trunks and dispatch rules (phone numbers), transfers. Needs the `sip.admin` grant. */
  sip: SipClient;
  webhooks: WebhookReceiver;
  /** A token that can join exactly one room, for a short time. */
  participantToken(room: string, identity: string, opts?: { name?: string; metadata?: string }): Promise<string>;
  /** An agent participant's token for one room (a standby agent serving an inbound call there): LiveKit counts it as an agent. */
  agentToken(room: string, identity: string): Promise<string>;
  /**
   * A supervisor's listen token: a hidden participant that can only subscribe (no audio, no data), joining for
   * `ttlSeconds` (docs/decisions/supervise-control-channel.md).
   */
  listenToken(room: string, identity: string, ttlSeconds: number): Promise<string>;
  /**
   * A supervisor's takeover token: a participant that may publish its microphone only (no data, no camera or
   * screen) and subscribe, joining for `ttlSeconds`. `attributes` go in the token (the participant cannot change
   * them): `lk.publish_on_behalf` keeps agents-js from taking it for the caller.
   */
  takeoverToken(room: string, identity: string, ttlSeconds: number, attributes: Record<string, string>): Promise<string>;
  /** Whether the room still exists on the server. */
  roomExists(room: string): Promise<boolean>;
}

const toHttp = (url: string) => url.replace(/^ws(s?):\/\//, 'http$1://');
const toWs = (url: string) => url.replace(/^http(s?):\/\//, 'ws$1://');

export function createLiveKit(config: Config): LiveKit {
  const apiUrl = toHttp(config.LIVEKIT_URL);
  const rooms = new RoomServiceClient(apiUrl, config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET);
  const dispatch = new AgentDispatchClient(apiUrl, config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET);
  return {
    publicUrl: config.LIVEKIT_PUBLIC_URL ?? toWs(config.LIVEKIT_URL),
    serverUrl: toWs(config.LIVEKIT_URL),
    agentName: config.AGENT_NAME,
    rooms,
    dispatch,
    sip: new SipClient(apiUrl, config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET),
    webhooks: new WebhookReceiver(config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET),
    async participantToken(room, identity, opts = {}) {
      const at = new AccessToken(config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET, {
        identity,
        ttl: config.CALL_TOKEN_TTL_SECONDS,
        ...(opts.name ? { name: opts.name } : {}),
        ...(opts.metadata ? { metadata: opts.metadata } : {}),
      });
      at.addGrant({ room, roomJoin: true, canPublish: true, canSubscribe: true, canPublishData: true });
      return at.toJwt();
    },
    async agentToken(room, identity) {
      const at = new AccessToken(config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET, { identity, ttl: config.CALL_TOKEN_TTL_SECONDS });
      at.kind = 'agent';
      // As LiveKit's own agent job tokens: the agent publishes its state as participant attributes.
      at.addGrant({ room, roomJoin: true, canPublish: true, canSubscribe: true, canPublishData: true, canUpdateOwnMetadata: true, agent: true });
      return at.toJwt();
    },
    async listenToken(room, identity, ttlSeconds) {
      const at = new AccessToken(config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET, { identity, name: 'supervisor', ttl: ttlSeconds });
      at.addGrant({ room, roomJoin: true, canSubscribe: true, canPublish: false, canPublishData: false, canUpdateOwnMetadata: false, hidden: true });
      return at.toJwt();
    },
    async takeoverToken(room, identity, ttlSeconds, attributes) {
      const at = new AccessToken(config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET, { identity, name: 'Supervisor', ttl: ttlSeconds, attributes });
      at.addGrant({
        room,
        roomJoin: true,
        canSubscribe: true,
        canPublish: true,
        canPublishSources: [TrackSource.MICROPHONE],
        canPublishData: false,
        canUpdateOwnMetadata: false,
      });
      return at.toJwt();
    },
    async roomExists(room) {
      const found = await rooms.listRooms([room]);
      return found.some((r) => r.name === room);
    },
  };
}
