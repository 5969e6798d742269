-- Claim the webhook delivery due first (graphcore.backend.webhooks): its due time moves `hold` ms ahead, so
-- that a deliverer that dies while it delivers leaves it due again then (at least once). A due id whose
-- record is gone (delivered meanwhile) is dropped.
-- KEYS[1] = the outbox (delivery id -> JSON record); KEYS[2] = its due set (id -> due ms)
-- ARGV[1] = the hold, ms
-- Returns {id, record} of the delivery claimed, or false when none is due.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
while true do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now_ms, 'LIMIT', 0, 1)
  if #ids == 0 then return false end
  local record = redis.call('HGET', KEYS[1], ids[1])
  if record then
    redis.call('ZADD', KEYS[2], now_ms + tonumber(ARGV[1]), ids[1])
    return {ids[1], record}
  end
  redis.call('ZREM', KEYS[2], ids[1])
end
