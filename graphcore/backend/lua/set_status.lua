-- Compare-and-set of a run's status (I7): terminal states are never left or overwritten. The status
-- change and the events that announce it are written together, or not at all. A step job sets statuses
-- fenced by its lease (I1): with KEYS[6], the change is made only while KEYS[6] holds the lease token; a
-- refused change is counted in the run hash (field 'refused:status'). Events go through _events.lua (a capped
-- stream, which takes its run record's expiry when new). With KEYS[7] too, the lease is given
-- back with the change (a step that pauses for input: its answer's job can claim the step at once).
-- The request-deadline index (R13) is kept here for the run: a pause whose requests have a deadline adds
-- the run (ARGV[4] = its earliest deadline); a run found or left in any other status than awaiting_input
-- is taken out of it (an end, a cancel, the expiry scan; a no-op, nothing written, when it is not in it).
-- A change to a terminal status or to awaiting_input adds the run's webhook delivery (_webhook.lua).
-- KEYS[1] = run hash; KEYS[2] = the run's event stream; KEYS[3] = the request-deadline index;
-- KEYS[4], KEYS[5] = the webhook outbox and its due set;
-- KEYS[6] (optional) = the step's lease key; KEYS[7] (optional) = the lease index
-- ARGV[1] = new status; ARGV[2] = comma-separated statuses allowed as the current one ("" = any non-terminal)
-- ARGV[3] = the run's member of the request-deadline index; ARGV[4] = deadline ms to index it under with
-- the change ("" = none); ARGV[5], ARGV[6] = a run-hash field and the value it must hold for the change to
-- be made ("" = no such check: the expiry scan checks the run still waits for that request)
-- ARGV[7] = n, then n field/value pairs to set with the status; then m, then m events (mode, step, data);
-- with KEYS[6], then the lease token; with KEYS[7], then the run's member of the lease index
-- Returns {1, previous status} when set (fenced: also when the run already has that status, the caller's
-- own change retried after its reply was lost, with KEYS[7] when the lease it gave back is still free),
-- {0, current status} when refused by the status rules or the field check, and
-- {-1, current status} when refused by the fence (the caller no longer holds the lease).
local function unindexed(status)
  if status ~= 'awaiting_input' then redis.call('ZREM', KEYS[3], ARGV[3]) end
end
--#include events
--#include fence
--#include terminal
--#include webhook
local current = redis.call('HGET', KEYS[1], 'status')
if not current then unindexed(''); return {0, ''} end
local token, member = ARGV[#ARGV], nil
if #KEYS >= 7 then token, member = ARGV[#ARGV - 1], ARGV[#ARGV] end
if #KEYS >= 6 and not holds(KEYS[6], token) then
  -- This change again, after it gave the lease back (its reply was lost): made, not refused.
  if member and current == ARGV[1] and redis.call('EXISTS', KEYS[6]) == 0 then return {1, current} end
  redis.call('HINCRBY', KEYS[1], 'refused:status', 1)
  return {-1, current}
end
if #KEYS >= 6 and current == ARGV[1] then return {1, current} end  -- this change again (a lost reply)
if finished(current) then
  unindexed(current); return {0, current}
end
local ok = ARGV[2] == ''
for s in string.gmatch(ARGV[2], '[^,]+') do if s == current then ok = true end end
if ok and ARGV[5] ~= '' then ok = redis.call('HGET', KEYS[1], ARGV[5]) == ARGV[6] end
if not ok then unindexed(current); return {0, current} end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
local i = 8
for _ = 1, tonumber(ARGV[7]) do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]); i = i + 2 end
local m = tonumber(ARGV[i]); i = i + 1
for _ = 1, m do
  run_event(KEYS[2], KEYS[1], ARGV[i], ARGV[i + 1], ARGV[i + 2]); i = i + 3
end
if member then
  redis.call('DEL', KEYS[6])
  redis.call('ZREM', KEYS[7], member)
end
if finished(ARGV[1]) or ARGV[1] == 'awaiting_input' then webhook_due(KEYS[1], ARGV[1], KEYS[4], KEYS[5]) end
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
elseif current == 'awaiting_input' and ARGV[1] ~= 'awaiting_input' then
  redis.call('ZREM', KEYS[3], ARGV[3])
  redis.call('HDEL', KEYS[1], 'request_deadline')
end
return {1, current}
