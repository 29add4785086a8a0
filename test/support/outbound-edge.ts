// What the outbound e2e files set up to dial out: the simulated carrier's termination edge, sending each number
// prefix to a SIP callee of the test, and the organisation's number with an outbound trunk through that edge (as a
// purchase from the simulated carrier leaves them).
import { SipClient } from 'livekit-server-sdk';
import { startSimulatedEdge, type SimulatedEdge } from '../../control-plane/src/modules/phone-numbers/carriers/simulated-edge.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';
import type { TestStack } from './stack.ts';

/** The edge on a free port of 127.0.0.1: a number starting with a route's prefix rings that port. */
export function startCalleeEdge(routes: [prefix: string, callee: { port: number }][], noAnswerMs = 3000): Promise<SimulatedEdge> {
  return startSimulatedEdge({
    listen: '127.0.0.1:0',
    routes: routes.map(([prefix, callee]) => ({ prefix, target: { host: '127.0.0.1', port: callee.port } })),
    noAnswerMs,
  });
}

/** LiveKit's outbound trunk `name` for `numbers`, through `edge`; its id. */
export async function outboundTrunkVia(stack: TestStack, edge: SimulatedEdge, name: string, numbers: string[]): Promise<string> {
  const sip = new SipClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  const trunk = await sip.createSipOutboundTrunk(name, `${edge.address.host}:${edge.address.port}`, numbers);
  return trunk.sipTrunkId;
}

/** The org's simulated number `from`, routed to `agentId`, dialling out through `edge` on a trunk named `trunkName`. */
export async function addOutboundNumber(
  stack: TestStack,
  sql: Sql,
  edge: SimulatedEdge,
  o: { trunkName: string; orgId: string; from: string; agentId: string },
): Promise<void> {
  const trunkId = await outboundTrunkVia(stack, edge, o.trunkName, [o.from]);
  await sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
            values (${o.orgId}, ${o.from}, 'simulated', ${o.agentId}, ${trunkId})`;
}
