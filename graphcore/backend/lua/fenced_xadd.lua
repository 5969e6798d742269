-- Append events of a step job (a node's custom chunk, a retry, progress, a batch of messages) to the run's
-- stream, in order, only while the caller still holds the step's lease (I1): a worker that lost its lease
-- adds nothing to the run's events. A refused call is counted once in the run hash (field
-- 'refused:events'). The stream is capped (_events.lua).
-- KEYS[1] = lease key; KEYS[2] = run hash; KEYS[3] = the run's event stream
-- ARGV[1] = lease token; then per event: mode, step, data (msgpack)
-- Returns 1 when appended, 0 when refused.
--#include events
--#include fence
if not holds(KEYS[1], ARGV[1]) then
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HINCRBY', KEYS[2], 'refused:events', 1) end
  return 0
end
for i = 2, #ARGV, 3 do
  xadd_event(KEYS[3], ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
inherit_expiry(KEYS[3], KEYS[2])  -- once for the batch (a message batch holds up to 200 events)
return 1
