// What the worker sends to open an inbound call (POST /internal/v1/calls/inbound) for a call that came in as the
// number's wiring routes it: the number's inbound trunk, its dispatch rule and a room that rule names. The
// security tests start from this leg and forge one part of it.

/** A number as POST /v1/phone-numbers answers it: wired to its inbound trunk and dispatch rule. */
export interface WiredNumber {
  id: string;
  phone_number: string;
  inbound_trunk_id: string;
  dispatch_rule_id: string;
}

/** The open request's body for a call from +15550100111 to `n`, in the room `pn-<number>_<caller>_<room>`. */
export const inboundLeg = (n: WiredNumber, room: string) => ({
  to_number: n.phone_number,
  from_number: '+15550100111',
  room_name: `pn-${n.id}_+15550100111_${room}`,
  sip_call_id: `cid-${room}`,
  trunk_id: n.inbound_trunk_id,
  dispatch_rule_id: n.dispatch_rule_id,
});
