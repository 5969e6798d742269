-- The retention sweep (K3, graphcore/backend/ttl.py): the threads whose keys expired (their score in the
-- retention index is past) lose their entries in the shared indexes, atomically: a thread used again
-- before this script runs has a later score and is left alone.
-- KEYS[1] retention index (members T and T:RUN, scored by the thread's expiry, ms); KEYS[2] run index;
-- KEYS[3] run -> thread hash; KEYS[4] lease index; KEYS[5] busy threads; KEYS[6] recovery set; KEYS[7] the
-- request-deadline index (R13)
-- ARGV[1] now (ms; Redis's clock is used when it is earlier); ARGV[2] most entries to remove
-- Per run T:RUN: its run index and run -> thread entries, its lease and request-deadline entries and its
-- 'enqueue' and 'handover' recovery entries (members as graphcore.keys.recovery_member builds them); per thread T: its busy entry.
-- Returns {entries removed, T:RUN of each run removed...} (the caller gives their admission slots back).
local t = redis.call('TIME')
local now = math.min(tonumber(ARGV[1]), tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local out = {#due}
for _, m in ipairs(due) do
  local run = string.match(m, ':([^:]*)$')
  if run then
    redis.call('ZREM', KEYS[2], run)
    redis.call('HDEL', KEYS[3], run)
    redis.call('ZREM', KEYS[4], m)
    redis.call('ZREM', KEYS[7], m)
    redis.call('ZREM', KEYS[6], 'enqueue:' .. m, 'handover:' .. m)
    out[#out + 1] = m
  else
    redis.call('ZREM', KEYS[5], m)
  end
  redis.call('ZREM', KEYS[1], m)
end
return out
