-- Drop the expired keys of long-term store namespaces, and the namespaces left without keys from the
-- namespace index; returns the namespaces that still hold keys.
-- KEYS[1] = the namespace index (graphq:{store}:namespaces); KEYS[2..] = each namespace's key set
-- ARGV[1] = now, ms since the epoch; ARGV[2..] = each namespace, dotted (same order as KEYS[2..])
local live = {}
for i = 2, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', ARGV[1])
  if redis.call('ZCARD', KEYS[i]) == 0 then
    redis.call('ZREM', KEYS[1], ARGV[i])
  else
    live[#live + 1] = ARGV[i]
  end
end
return live
