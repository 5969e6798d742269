-- One keeper tick for a running step (R18, X1): extend the lease when due, and report a cancel request.
-- A renewal moves the lease's deadline in the lease index with it.
-- KEYS[1] = lease key; KEYS[2] = run hash; KEYS[3] = the lease index
-- ARGV[1] = token; ARGV[2] = time-to-live in milliseconds; ARGV[3] = '1' to renew now, '0' to only look;
-- ARGV[4] = the run's member of the lease index
-- Returns {held, cancel}: held = 1 while the caller still holds the lease (0 when lost); cancel = the run's
-- 'cancel' field ('' when none; 'interrupt' asks running nodes to stop).
--#include fence
if not holds(KEYS[1], ARGV[1]) then return {0, ''} end
if ARGV[3] == '1' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[3], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2]), ARGV[4])
end
return {1, redis.call('HGET', KEYS[2], 'cancel') or ''}
