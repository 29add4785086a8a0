// A web caller, as the e2e tests start one: POST /v1/calls/web through the API, join the room with the token it
// returns (a real rtc-node participant), publish a microphone, and record what the agent says.
import { RtcClient, type Recorder } from './rtc-client.ts';
import type { ApiResponse } from './e2e.ts';

type Api = (method: string, path: string, body?: unknown) => Promise<ApiResponse<any>>;

export interface WebCaller {
  callId: string;
  /** The API's answer to the POST (room_name, server_url, ...). */
  call: Record<string, unknown>;
  client: RtcClient;
  /** Records the agent from the start of the call. */
  heard: Recorder;
}

/** Starts a web call and joins it as the caller; the caller leaves again if joining fails. */
export async function webCall(api: Api, body: Record<string, unknown>): Promise<WebCaller> {
  const created = await api('POST', '/v1/calls/web', body);
  if (created.status !== 201) throw new Error(`POST /v1/calls/web answered ${created.status}: ${JSON.stringify(created.body)}`);
  const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
  try {
    await client.publishMicrophone();
  } catch (err) {
    await client.leave();
    throw err;
  }
  return { callId: created.body.id as string, call: created.body, client, heard: client.record({}) };
}
