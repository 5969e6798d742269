-- Persist one finished task's writes only while the caller still holds the lease (I1, I2), and mark the
-- run as having pending writes so that a re-executed step knows to read them.
-- KEYS[1] = lease key; KEYS[2] = pending-writes hash; KEYS[3] = run hash
-- ARGV[1] = lease token; ARGV[2] = task id; ARGV[3] = encoded writes
-- Returns 1 when written, 0 when the lease is held by someone else or expired.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[3], 'partial', '1')
return 1
