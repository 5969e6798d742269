-- A thread is used outside a step's commit (K3): a run created on it, an answer, a fork; or a Python
-- pipeline created or overwrote some of its keys. Queued on the caller's MULTI after its writes
-- (graphcore.backend.ttl), so that it adds no round trip.
-- KEYS[1] the thread's key set; KEYS[2] the retention index; KEYS[3] the thread's run set; KEYS[4..] keys
-- of the thread to register (they need not exist yet: a run's events stream and requests hash are named
-- when the run is created, and expire with the thread once written)
-- ARGV[1] thread id; ARGV[2] op: 'use' (register KEYS[4..], then refresh the whole thread with ARGV[3]) or
-- 'add' (register KEYS[4..] with the thread's current expiry, when it has one); ARGV[3] the TTL in ms (op
-- 'use')
-- Returns the thread's new deadline (ms since the epoch) for 'use', else 0.
--#include retain
if ARGV[2] == 'add' then
  retain_keys(KEYS[1], unpack(KEYS, 4))
  return 0
end
for i = 4, #KEYS do redis.call('SADD', KEYS[1], KEYS[i]) end
return refresh(KEYS[1], KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[3]))
