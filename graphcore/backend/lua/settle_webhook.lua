-- Record what became of a webhook delivery (graphcore.backend.webhooks), only while it is still in the
-- outbox (another deliverer may have delivered it meanwhile: then a failure here changes nothing).
-- KEYS[1] = the outbox (delivery id -> JSON record); KEYS[2] = its due set; KEYS[3] = the dead letters
-- ARGV[1] = delivery id; ARGV[2] = outcome: 'delivered' (the record goes), 'retry' (record ARGV[3], due at
-- ARGV[4] ms), 'dead' (record ARGV[3], given up now: out of the due set, into the dead letters), 'again'
-- (a dead letter due again now, record ARGV[3]); ARGV[5] = for 'retry' and 'dead', the tries the record
-- had when the caller claimed it: a deliverer whose hold ran out while another claimed the delivery and
-- settled a later try writes nothing (its record would set the tries back)
-- Returns 1 when something changed, 0 when the delivery is not there (not dead, for 'again') or was tried
-- since the caller's claim.
local id, outcome = ARGV[1], ARGV[2]
if outcome == 'delivered' then
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  return redis.call('HDEL', KEYS[1], id)
end
local stored = redis.call('HGET', KEYS[1], id)
if not stored then return 0 end
if ARGV[5] ~= '' and tostring(cjson.decode(stored)['attempts'] or 0) ~= ARGV[5] then return 0 end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if outcome == 'again' then
  if redis.call('ZREM', KEYS[3], id) == 0 then return 0 end
  redis.call('HSET', KEYS[1], id, ARGV[3])
  redis.call('ZADD', KEYS[2], now_ms, id)
  return 1
end
redis.call('HSET', KEYS[1], id, ARGV[3])
if outcome == 'retry' then
  redis.call('ZADD', KEYS[2], ARGV[4], id)
  return 1
end
redis.call('ZREM', KEYS[2], id)
redis.call('ZADD', KEYS[3], now_ms, id)
return 1
