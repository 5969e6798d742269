-- Extend a lease if the caller still holds it (R18).
-- KEYS[1] = lease key; ARGV[1] = token; ARGV[2] = time-to-live in milliseconds
-- Returns 1 when renewed, 0 when lost.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
