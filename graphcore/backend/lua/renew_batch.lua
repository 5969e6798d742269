-- One keeper tick for a batch of a split step (R18, X1): as renew_lease.lua for a step's lease.
-- KEYS[1] = the split's hash (the batch's lease key); KEYS[2] = the run hash
-- ARGV[1] = the batch's token ('<hex>#<batch>'); ARGV[2] = time-to-live, ms; ARGV[3] = '1' to renew now
-- Returns {held, cancel}: held = 1 while the caller holds the batch (0 when lost, or the split is closed);
-- cancel = the run's 'cancel' field, also when the batch is lost: a cancel with interrupt ends the run and
-- closes the split at once, maybe before a helper's keeper looks, and its tasks must stop all the same.
--#include fence
--#include batch
if not holds(KEYS[1], ARGV[1]) then return {0, redis.call('HGET', KEYS[2], 'cancel') or ''} end
if ARGV[3] == '1' then
  local batch = string.sub(ARGV[1], string.find(ARGV[1], '#', 1, true) + 1)
  redis.call('HSET', KEYS[1], 'u:' .. batch, now_ms() + tonumber(ARGV[2]))
end
return {1, redis.call('HGET', KEYS[2], 'cancel') or ''}
