-- The retention sweep (K3, graphcore/backend/ttl.py): the threads whose keys expired (their score in the
-- retention index is past) lose their entries in the shared indexes, atomically: a thread used again
-- before this script runs has a later score and is left alone.
-- KEYS[1] retention index (members T and T:RUN, scored by the thread's expiry, ms); KEYS[2] run index;
-- KEYS[3] run -> thread hash; KEYS[4] lease index; KEYS[5] busy threads; KEYS[6] recovery set; KEYS[7] the
-- request-deadline index (R13)
-- ARGV[1] now (ms; Redis's clock is used when it is earlier); ARGV[2..] the due members the caller read
-- (and gave the admission slots of back): each one still due is removed
-- Per run T:RUN: its run index and run -> thread entries, its lease and request-deadline entries and its
-- 'enqueue' and 'handover' recovery entries (members as graphcore.keys.recovery_member builds them); per
-- thread T: its busy entry.
-- Returns the entries removed.
local t = redis.call('TIME')
local now = math.min(tonumber(ARGV[1]), tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local removed = 0
for i = 2, #ARGV do
  local m = ARGV[i]
  local score = redis.call('ZSCORE', KEYS[1], m)
  if score and tonumber(score) <= now then
    local run = string.match(m, ':([^:]*)$')
    if run then
      redis.call('ZREM', KEYS[2], run)
      redis.call('HDEL', KEYS[3], run)
      redis.call('ZREM', KEYS[4], m)
      redis.call('ZREM', KEYS[7], m)
      redis.call('ZREM', KEYS[6], 'enqueue:' .. m, 'handover:' .. m)
    else
      redis.call('ZREM', KEYS[5], m)
    end
    redis.call('ZREM', KEYS[1], m)
    removed = removed + 1
  end
end
return removed
