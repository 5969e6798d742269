-- Claim a batch of a split step (graphq.worker.step.split): the next batch never handed out, else one whose
-- lease lapsed (its worker died or stopped) and that is not done.
-- KEYS[1] = the split's hash
-- ARGV[1] = the claimer's token (hex, without '#'); ARGV[2] = lease time-to-live, ms
-- Returns {batch, run id, batches never handed out, times the batch was claimed} when claimed (the batch's
-- token is ARGV[1] .. '#' .. batch; its claims are counted in 'c:<batch>'); {-1, '', 0, 0} when no batch is
-- free or the split is closed.
--#include batch
local split = redis.call('HMGET', KEYS[1], 'batches', 'next', 'run')
if not split[1] then return {-1, '', 0, 0} end
local batches, now = tonumber(split[1]), now_ms()
local function take(i, left)
  redis.call('HSET', KEYS[1], 'l:' .. i, ARGV[1] .. '#' .. i, 'u:' .. i, now + tonumber(ARGV[2]))
  return {i, split[3], left, redis.call('HINCRBY', KEYS[1], 'c:' .. i, 1)}
end
local next = tonumber(split[2])
if next < batches then
  redis.call('HINCRBY', KEYS[1], 'next', 1)
  return take(next, batches - next - 1)
end
for i = 0, batches - 1 do
  local state = redis.call('HMGET', KEYS[1], 'd:' .. i, 'u:' .. i)
  if not state[1] and (not state[2] or tonumber(state[2]) < now) then return take(i, 0) end
end
return {-1, '', 0, 0}
