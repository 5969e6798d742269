-- Release a lease if the caller still holds it, and take it out of the lease index.
-- KEYS[1] = lease key; KEYS[2] = the lease index; ARGV[1] = token; ARGV[2] = the run's member of the index
-- Returns 1 when released.
--#include fence
if holds(KEYS[1], ARGV[1]) then
  redis.call('ZREM', KEYS[2], ARGV[2])
  return redis.call('DEL', KEYS[1])
end
return 0
