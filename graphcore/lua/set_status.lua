-- Compare-and-set of a run's status (I7): terminal states are never left or overwritten.
-- KEYS[1] = run hash
-- ARGV[1] = new status; ARGV[2] = comma-separated statuses allowed as the current one ("" = any non-terminal)
-- ARGV[3..] = extra field, value pairs to set with the status
-- Returns 1 when set, 0 when refused (returns the current status as a second element).
local current = redis.call('HGET', KEYS[1], 'status')
if not current then return {0, ''} end
if current == 'completed' or current == 'failed' or current == 'canceled' then return {0, current} end
if ARGV[2] ~= '' then
  local ok = false
  for s in string.gmatch(ARGV[2], '[^,]+') do if s == current then ok = true end end
  if not ok then return {0, current} end
end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return {1, current}
