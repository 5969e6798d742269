-- Let a dead process's lease lapse now (its supervisor saw it die): delete the key if the caller's token
-- still holds it, and set its deadline in the lease index to now, so that the reaper's next pass acts on
-- it (R18) instead of waiting out the lease's time-to-live.
-- KEYS[1] = lease key; KEYS[2] = the lease index; ARGV[1] = token; ARGV[2] = the run's member of the index
-- Returns the deadline it set (ms since the epoch, Redis's clock; the reaper's scripts match it), or 0 when
-- the lease was not the caller's (committed, given back, taken over).
--#include fence
if not holds(KEYS[1], ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now_ms, ARGV[2])
return now_ms
