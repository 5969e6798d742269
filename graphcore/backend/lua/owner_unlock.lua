-- Give an owner-token lock back, only if the caller owns it (compare-and-delete).
-- KEYS[1] = the lock; ARGV[1] = owner token
-- Returns 1 when released, 0 when the caller did not own it.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
