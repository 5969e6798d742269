-- Compare-and-set of a run's status (I7): terminal states are never left or overwritten. The status
-- change and the events that announce it are written together, or not at all. A step job sets statuses
-- fenced by its lease (I1): with KEYS[3], the change is made only while KEYS[3] holds the lease token; a
-- refused change is counted in the run hash (field 'refused:status'). Events go through _events.lua (a capped
-- stream, which takes its run record's expiry when new). With KEYS[4] too, the lease is given
-- back with the change (a step that pauses for input: its answer's job can claim the step at once).
-- KEYS[1] = run hash; KEYS[2] = the run's event stream; KEYS[3] (optional) = the step's lease key;
-- KEYS[4] (optional) = the lease index
-- ARGV[1] = new status; ARGV[2] = comma-separated statuses allowed as the current one ("" = any non-terminal)
-- ARGV[3] = n, then n field/value pairs to set with the status; then m, then m events (mode, step, data);
-- with KEYS[3], then the lease token; with KEYS[4], then the run's member of the lease index
-- Returns {1, previous status} when set (fenced: also when the run already has that status, the caller's
-- own change retried after its reply was lost, with KEYS[4] when the lease it gave back is still free),
-- {0, current status} when refused by the status rules, and
-- {-1, current status} when refused by the fence (the caller no longer holds the lease).
--#include events
local current = redis.call('HGET', KEYS[1], 'status')
if not current then return {0, ''} end
local token, member = ARGV[#ARGV], nil
if #KEYS >= 4 then token, member = ARGV[#ARGV - 1], ARGV[#ARGV] end
if #KEYS >= 3 and redis.call('GET', KEYS[3]) ~= token then
  -- This change again, after it gave the lease back (its reply was lost): made, not refused.
  if member and current == ARGV[1] and redis.call('EXISTS', KEYS[3]) == 0 then return {1, current} end
  redis.call('HINCRBY', KEYS[1], 'refused:status', 1)
  return {-1, current}
end
if #KEYS >= 3 and current == ARGV[1] then return {1, current} end  -- this change again (a lost reply)
if current == 'completed' or current == 'failed' or current == 'canceled' then return {0, current} end
if ARGV[2] ~= '' then
  local ok = false
  for s in string.gmatch(ARGV[2], '[^,]+') do if s == current then ok = true end end
  if not ok then return {0, current} end
end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
local i = 4
for _ = 1, tonumber(ARGV[3]) do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]); i = i + 2 end
local m = tonumber(ARGV[i]); i = i + 1
for _ = 1, m do
  run_event(KEYS[2], KEYS[1], ARGV[i], ARGV[i + 1], ARGV[i + 2]); i = i + 3
end
if member then
  redis.call('DEL', KEYS[3])
  redis.call('ZREM', KEYS[4], member)
end
return {1, current}
