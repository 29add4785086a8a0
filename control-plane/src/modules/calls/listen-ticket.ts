// The listen stream's address, handed out by POST /v1/calls/{id}/listen: this API's public base URL as ws(s), and a
// single-use ticket (queries-listen.ts). The ticket is the only credential in it: no key or platform secret.
import type { Services } from '../../services.ts';
import type { Auth } from '../../auth/service.ts';
import { issueListenTicket } from './queries-listen.ts';

export const LISTEN_STREAM_PATH = (callId: string) => `/v1/calls/${callId}/listen/stream`;

export async function listenStreamUrl(services: Services, auth: Auth, callId: string, expiresAt: Date): Promise<string> {
  const ticket = await issueListenTicket(services.sql, auth, callId, expiresAt);
  const base = services
    .publicBaseUrl()
    .replace(/\/$/, '')
    .replace(/^http(s?):\/\//, 'ws$1://');
  return `${base}${LISTEN_STREAM_PATH(callId)}?ticket=${ticket}`;
}
