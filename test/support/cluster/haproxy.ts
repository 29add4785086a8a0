// The load balancer of the one-machine cluster: HAProxy from Debian (`apt-get install haproxy`), in front of the
// control-plane replicas (HTTP, health-checked on /health/ready as the chart's readiness probe does) and of the
// LiveKit nodes (HTTP and WebSocket signalling, health-checked on `/`). Connection failures are retried on the
// other server at once; an empty answer (a replica killed mid-request) is retried only for GET, since a POST may
// have been committed before its replica died.
export interface HaproxyPorts {
  /** The API and internal routes of the control plane, as clients, workers and LiveKit's webhooks see them. */
  api: number;
  /** LiveKit's signalling and Twirp API, as clients, workers, the SIP bridge and the control plane see it. */
  livekit: number;
}

export function renderHaproxyConfig(ports: HaproxyPorts, controlPlanes: number[], livekitNodes: number[]): string {
  const servers = (prefix: string, list: number[]) => list.map((p, i) => `  server ${prefix}${i + 1} 127.0.0.1:${p} check`).join('\n');
  return `global
  maxconn 4000

defaults
  mode http
  log global
  timeout connect 2s
  timeout client 1h
  timeout server 1h
  timeout tunnel 1h
  timeout http-request 10s
  retries 3
  option redispatch 1
  retry-on conn-failure empty-response response-timeout
  default-server inter 1s fastinter 500ms downinter 1s fall 2 rise 2

frontend api
  bind 127.0.0.1:${ports.api}
  http-request disable-l7-retry unless METH_GET
  default_backend control_plane

backend control_plane
  balance roundrobin
  option httpchk GET /health/ready
  http-check expect status 200
${servers('cp', controlPlanes)}

frontend livekit
  bind 127.0.0.1:${ports.livekit}
  http-request disable-l7-retry unless METH_GET
  default_backend livekit

backend livekit
  balance leastconn
  option httpchk GET /
  http-check expect status 200
${servers('lk', livekitNodes)}
`;
}
