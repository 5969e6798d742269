-- Move one pinned run to another version of its workflow (graphq runs migrate): only while it has not ended
-- and is still pinned to the version the caller read. Unless told not to check (ARGV[5] '-'), also only
-- while no step of it is in flight (its lease key KEYS[3] absent) and its head is still the checkpoint the
-- upgrade check saw (ARGV[5]; '' none): a step committed since, or running, may have made next tasks the
-- check did not see. The move is recorded on the run ('migrated_from', 'migrated_at') and in its event
-- stream (a 'status' event of its status, with the versions).
-- KEYS[1] run hash; KEYS[2] the run's event stream; KEYS[3] the run's lease key
-- ARGV[1] from version; ARGV[2] to version; ARGV[3] now (ISO-8601); ARGV[4] the event's data (msgpack);
-- ARGV[5] the head the check saw ('' none; '-' do not check)
-- Returns 1 when moved; 0 when the run ended or is no longer pinned to ARGV[1]; 2 when a step of it is in
-- flight; 3 when its head moved on since the check.
--#include events
--#include terminal
local run = redis.call('HMGET', KEYS[1], 'status', 'version', 'pinned', 'step', 'head')
if not run[1] or finished(run[1]) or run[2] ~= ARGV[1] or run[3] ~= '1' then return 0 end
if ARGV[5] ~= '-' then
  if redis.call('EXISTS', KEYS[3]) == 1 then return 2 end
  if (run[5] or '') ~= ARGV[5] then return 3 end
end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'migrated_from', ARGV[1], 'migrated_at', ARGV[3])
run_event(KEYS[2], KEYS[1], 'status', run[4], ARGV[4])
return 1
