-- Fragment (not a script): the webhook outbox (graphcore.backend.webhooks), taken in with
-- `--#include webhook` by every script that ends a run or pauses it for input.
-- webhook_due(run, status, outbox, due) adds a delivery of run hash `run`, whose status just became
-- `status` (an end or a pause: the caller's to say), in the same script as the change: a crash after it
-- cannot lose the delivery. Only a run that names a webhook (its field 'webhook') gets one; any other costs
-- one HGET. The delivery is a JSON record in hash `outbox` under its id RUN:STATUS:N (N counts the run's
-- deliveries, run field 'webhooks': unique, and the same at every try, for receivers to deduplicate), and
-- its due time (now, ms) in zset `due`.
local function webhook_due(run, status, outbox, due)
  local url = redis.call('HGET', run, 'webhook')
  if not url then return end
  local f = redis.call('HMGET', run, 'id', 'thread_id', 'workflow', 'tenant')
  local id = f[1] .. ':' .. status .. ':' .. redis.call('HINCRBY', run, 'webhooks', 1)
  local t = redis.call('TIME')
  local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', outbox, id, cjson.encode({run_id = f[1], thread_id = f[2], workflow = f[3],
    tenant = f[4], status = status, url = url, created_ms = now_ms, attempts = 0}))
  redis.call('ZADD', due, now_ms, id)
end
