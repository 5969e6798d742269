-- Write a hash field only while the caller still holds the lease (I1, I2: fenced pending writes).
-- KEYS[1] = lease key; KEYS[2] = hash
-- ARGV[1] = lease token; ARGV[2] = field; ARGV[3] = value
-- Returns 1 when written, 0 when the lease is held by someone else or expired.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
