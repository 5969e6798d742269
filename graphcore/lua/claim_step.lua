-- Claim a run's step for this worker in one round trip (R2, R18): read the run, and take the lease only
-- when the run is still at this step and not finished (a stale duplicate job never holds the lease).
-- KEYS[1] = run hash; KEYS[2] = lease key
-- ARGV[1] = lease token; ARGV[2] = lease time-to-live in milliseconds; ARGV[3] = the job's step number
-- Returns {code, run hash as a flat field/value list}; code 0 = no such run, 1 = stale (finished or at
-- another step), 2 = another worker holds the lease, 3 = claimed.
local run = redis.call('HGETALL', KEYS[1])
if #run == 0 then return {0, run} end
local status = redis.call('HGET', KEYS[1], 'status')
local step = redis.call('HGET', KEYS[1], 'step')
if status == 'completed' or status == 'failed' or status == 'canceled' or step ~= ARGV[3] then
  return {1, run}
end
if not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2, run} end
return {3, run}
