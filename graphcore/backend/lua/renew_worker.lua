-- A worker's heartbeat renewed by its supervising process (R18): a node that holds the GIL
-- stops the worker's own heartbeat thread, yet the worker is alive. Renews the record's expiry and its
-- index entry, and keeps RQ's worker hash from expiring, without writing any field of the record but
-- heartbeat_ms. A record that is gone is left gone (its own heartbeat writes it whole again).
-- KEYS[1] = the worker's record hash; KEYS[2] = the worker index; KEYS[3] = RQ's worker hash
-- ARGV[1] = worker id; ARGV[2] = time-to-live in milliseconds
-- Returns the heartbeat time (milliseconds since the epoch), or 0 when the record is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'heartbeat_ms', now)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
local left = redis.call('PTTL', KEYS[3])
if left >= 0 and left < ttl then redis.call('PEXPIRE', KEYS[3], ttl) end
return now
