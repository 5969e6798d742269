-- Hash writes of a step job, made only while the caller still holds the step's lease (I1): a finished
-- task's pending writes (with the run's 'partial' mark, I2), the run's head at step 0, the answers seeded
-- for a branch run, the run's request records. A refused write is counted in the run hash
-- (field 'refused:<kind>'), so that a worker that lost its lease (paused, partitioned) changes nothing.
-- With a thread TTL (K3, _retain.lua) the hashes join the thread's key set and take its expiry.
-- KEYS[1] = lease key; KEYS[2] = run hash; KEYS[3] = the thread's key set; KEYS[4..] = the hashes to write
-- ARGV[1] = lease token; ARGV[2] = kind of write (counted when refused); then, for each hash of KEYS[4..]
-- in order: n, then n field/value pairs
-- Returns 1 when written, 0 when the lease is held by someone else or expired (nothing written).
--#include retain
--#include fence
if not holds(KEYS[1], ARGV[1]) then
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HINCRBY', KEYS[2], 'refused:' .. ARGV[2], 1) end
  return 0
end
local i = 3
for k = 4, #KEYS do
  local n = tonumber(ARGV[i]); i = i + 1
  for _ = 1, n do redis.call('HSET', KEYS[k], ARGV[i], ARGV[i + 1]); i = i + 2 end
end
retain_keys(KEYS[3], unpack(KEYS, 4))
return 1
