-- Fragment (not a script): a thread's retention (K3, graphcore/backend/ttl.py), taken in with the line
-- `--#include retain` by the scripts that write a thread's keys. While a thread TTL applies, the thread's
-- key set (graphcore.keys.thread_keys) names the thread's keys and carries the thread's expiry; a thread
-- that never had one has no set and retain_keys changes nothing (one PTTL read), so that an unset TTL
-- costs no EXPIRE and no key. A thread whose TTL was dropped (forget) keeps its set, without an expiry,
-- still naming every key, so that a later run with a TTL expires them all.
-- retain_keys(ks, k...): register keys the script created (or overwrote: a SET clears an expiry) in the
--   key set ks, when it exists, and give them the set's expiry, when it has one.
-- refresh(ks, idx, runs, thread, ttl): the thread is used: every key named in ks, ks itself and the
--   thread's entries in the retention index idx (the thread id, and thread:run for each run of the
--   thread's run set `runs`) expire ttl ms from now (Redis's clock). Returns that deadline (ms).
-- forget(ks, idx, runs, thread): the thread is to be kept after all (a run without a TTL committed a step
--   on it): its keys and ks lose their expiry (ks is kept), its index entries go. A no-op without ks or
--   when it has no expiry already (one PTTL).
-- refresh_due(ks, ttl): whether ks expires sooner than half the TTL from now (or is missing): a step
--   refreshes the whole thread at most once per half TTL and registers its own keys every time.
local function retain_keys(ks, ...)
  local left = redis.call('PTTL', ks)
  if left == -2 then return end
  for _, k in ipairs({...}) do
    redis.call('SADD', ks, k)
    if left > 0 then redis.call('PEXPIRE', k, left) end
  end
end

local function index_members(runs, thread)
  local members = {thread}
  for _, run in ipairs(redis.call('ZRANGE', runs, 0, -1)) do members[#members + 1] = thread .. ':' .. run end
  return members
end

local function refresh(ks, idx, runs, thread, ttl)
  local t = redis.call('TIME')
  local deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttl
  redis.call('SADD', ks, runs)
  for _, k in ipairs(redis.call('SMEMBERS', ks)) do redis.call('PEXPIREAT', k, deadline) end
  redis.call('PEXPIREAT', ks, deadline)
  for _, m in ipairs(index_members(runs, thread)) do redis.call('ZADD', idx, deadline, m) end
  return deadline
end

local function forget(ks, idx, runs, thread)
  if redis.call('PTTL', ks) < 0 then return end
  for _, k in ipairs(redis.call('SMEMBERS', ks)) do redis.call('PERSIST', k) end
  redis.call('PERSIST', ks)
  for _, m in ipairs(index_members(runs, thread)) do redis.call('ZREM', idx, m) end
end

local function refresh_due(ks, ttl)
  return redis.call('PTTL', ks) < ttl / 2
end
