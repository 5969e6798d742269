-- A worker's heartbeat (R18, O2): write its record, which expires unless renewed, and its entry in the
-- worker index, scored by when the heartbeat expires (Redis's clock), so that the reaper finds dead workers
-- with ZRANGEBYSCORE.
-- KEYS[1] = the worker's record hash; KEYS[2] = the worker index
-- ARGV[1] = worker id; ARGV[2] = time-to-live in milliseconds; then field/value pairs of the record
-- Returns the heartbeat time, milliseconds since the epoch.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[1], 'heartbeat_ms', now)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
return now
