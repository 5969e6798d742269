-- Store one checkpoint outside a step's commit — the in-process executor and update_state (no fence), or a
-- subgraph running inside a step job (G7, fenced by the step's lease, I1): the record, its history entry,
-- its channel values and its log appends, all or nothing.
-- KEYS[1] lease key, KEYS[2] run hash (both unused without a fence), KEYS[3] checkpoint hash,
-- KEYS[4] history list, KEYS[5] the thread's key set (K3: with a thread TTL the keys written join it and
-- take its expiry, _retain.lua), KEYS[6..] channel value hashes and log lists (by index)
-- ARGV[1] lease token ('' = no fence), ARGV[2] checkpoint id, ARGV[3] checkpoint record, then the plan's two
-- sections, values and appends (see _plan.lua, whose append guard applies).
-- With a fence, a caller that no longer holds the lease writes nothing; the refusal is counted in the run
-- hash (field 'refused:subgraph'). A checkpoint already stored is this write again (a retry after a reply
-- lost in a Redis outage): nothing is written.
-- Returns 'ok', 'lease' (refused by the fence) or 'log' (an append guard failed).
--#include fence
if ARGV[1] ~= '' and not holds(KEYS[1], ARGV[1]) then
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HINCRBY', KEYS[2], 'refused:subgraph', 1) end
  return 'lease'
end
if redis.call('HEXISTS', KEYS[3], ARGV[2]) == 1 then return 'ok' end
--#include plan
--#include retain
if not write_plan(4, ARGV[2], ARGV[3]) then return 'log' end
retain_keys(KEYS[5], KEYS[3], KEYS[4], unpack(KEYS, 6))
return 'ok'
