-- One keeper tick for a running step (R18, X1): extend the lease when due, and report a cancel request.
-- KEYS[1] = lease key; KEYS[2] = run hash
-- ARGV[1] = token; ARGV[2] = time-to-live in milliseconds; ARGV[3] = '1' to renew now, '0' to only look
-- Returns {held, cancel}: held = 1 while the caller still holds the lease (0 when lost); cancel = the run's
-- 'cancel' field ('' when none; 'interrupt' asks running nodes to stop).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0, ''} end
if ARGV[3] == '1' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, redis.call('HGET', KEYS[2], 'cancel') or ''}
