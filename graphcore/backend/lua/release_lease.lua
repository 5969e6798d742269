-- Release a lease if the caller still holds it.
-- KEYS[1] = lease key; ARGV[1] = token. Returns 1 when released.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
