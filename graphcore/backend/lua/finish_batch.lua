-- A batch of a split step ends (graphq.worker.step.split): done, or failed with the failure that ends its
-- run, and with its tasks stopped at a subgraph's breakpoint; its lease is given back and the step's owner
-- woken (the list of batches done).
-- KEYS[1] = the split's hash; KEYS[2] = its list of batches done
-- ARGV[1] = the batch's token ('<hex>#<batch>'); ARGV[2] = the failure (JSON) or ''; ARGV[3] = its stopped
-- tasks (serde) or ''
-- Returns the batches done so far, or -1 when the batch is not the caller's (nothing written).
--#include fence
if not holds(KEYS[1], ARGV[1]) then return -1 end
local batch = string.sub(ARGV[1], string.find(ARGV[1], '#', 1, true) + 1)
redis.call('HSET', KEYS[1], 'd:' .. batch, 1)
redis.call('HDEL', KEYS[1], 'l:' .. batch, 'u:' .. batch)
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'f:' .. batch, ARGV[2]) end
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 's:' .. batch, ARGV[3]) end
redis.call('RPUSH', KEYS[2], batch)
local left = redis.call('PTTL', KEYS[1])
if left > 0 then redis.call('PEXPIRE', KEYS[2], left) end  -- the record's expiry (none: none)
return redis.call('HINCRBY', KEYS[1], 'done', 1)
