-- The helper jobs of a split step (graphq.worker.step.splitting): count those queued ('q', up when one is
-- enqueued, down when one starts) and, for its owner, the batches other workers hold now, so that the owner
-- keeps one helper for each other live worker (a helper whose process died holds nothing and is replaced).
-- KEYS[1] = the split's hash
-- ARGV[1] = change to the count of queued helpers (0: only look); ARGV[2] = the owner's token (hex, without
-- '#': its own batches are not counted), or '' not to count held batches
-- Returns {queued helpers, batches others hold}; {-1, 0} when the split is closed (nothing written).
--#include batch
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
local queued = redis.call('HINCRBY', KEYS[1], 'q', ARGV[1])
if ARGV[2] == '' then return {queued, 0} end
local fields, now, held = redis.call('HGETALL', KEYS[1]), now_ms(), 0
local owner = ARGV[2] .. '#'
for i = 1, #fields, 2 do
  local name, value = fields[i], fields[i + 1]
  if string.sub(name, 1, 2) == 'l:' and string.sub(value, 1, #owner) ~= owner then
    local until_ms = redis.call('HGET', KEYS[1], 'u:' .. string.sub(name, 3))
    if until_ms and tonumber(until_ms) >= now then held = held + 1 end
  end
end
return {queued, held}
