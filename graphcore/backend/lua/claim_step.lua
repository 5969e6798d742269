-- Claim a run's step for this worker in one round trip (R2, R18, X1): read the run, and take the lease only
-- when the run is still at this step and not finished (a stale duplicate job never holds the lease). A
-- run with a pending cancel request ends Canceled here, before its next super-step starts, unless another
-- worker holds the step's lease (a duplicate job of a running step): only the lease holder writes (I1), so
-- that step goes on and the cancel ends the run at its next claim or its completing commit. The lease's
-- deadline goes into the lease index, and the run records which worker holds it (the reaper names it).
-- A run whose earlier lease lapsed without a commit or release (its worker died) is still in the index:
-- it is left to the reaper (code 2), so that no job — RQ's abandoned-job handling included — runs the step
-- again behind the reaper's back.
-- A run pinned to a version of its workflow (run fields 'pinned', 'version') that is not the version this
-- worker serves is not claimed (code 5): no lease, no write; the job's entry in the index of unclaimed step
-- jobs stays, and the worker hands the job to its version's queue. Otherwise the entry goes, whatever the
-- outcome (the job is consumed). A run claimed without a version yet (its first step) gets this worker's:
-- the version it started with.
-- KEYS[1] = run hash; KEYS[2] = lease key; KEYS[3] = the run's event stream; KEYS[4] = the lease index;
-- KEYS[5] = the index of unclaimed step jobs; KEYS[6], KEYS[7] = the webhook outbox and its due set (a
-- cancel that ends the run here adds its webhook delivery, _webhook.lua)
-- ARGV[1] = lease token; ARGV[2] = lease time-to-live in milliseconds; ARGV[3] = the job's step number;
-- ARGV[4] = now (ISO-8601); ARGV[5] = the error record (JSON) of a cancelled run; ARGV[6] = the data of its
-- status event (msgpack), appended to the stream KEYS[3] with the cancellation; ARGV[7] = the run's member
-- of the lease index; ARGV[8] = the claiming worker's id; ARGV[9] = the job's member of KEYS[5]; ARGV[10] =
-- the version of the run's workflow this worker serves ('' = do not check)
-- Returns {code, run hash as a flat field/value list}; code 0 = no such run, 1 = stale (finished or at
-- another step), 2 = another worker holds the lease (or held it and died), 3 = claimed, 4 = cancelled now,
-- 5 = pinned to another version.
--#include events
--#include terminal
--#include webhook
local run = redis.call('HGETALL', KEYS[1])
local field = {}  -- the fields read below, from the reply (no call of their own)
for i = 1, #run, 2 do field[run[i]] = run[i + 1] end
local status, step = field['status'], field['step']
local current = #run > 0 and not finished(status) and step == ARGV[3]
local version = field['version']  -- none before its first step is claimed
local pinned = field['pinned'] == '1' and version and not field['cancel']  -- a cancel needs no code
if current and pinned and ARGV[10] ~= '' and version ~= ARGV[10] then
  return {5, run}
end
redis.call('ZREM', KEYS[5], ARGV[9])
if #run == 0 then return {0, run} end
if not current then return {1, run} end
-- The same claim again (same token: its reply was lost in a Redis outage and the worker retried): its own.
local holder = redis.call('GET', KEYS[2])
if holder == ARGV[1] then return {3, run} end
if holder or redis.call('ZSCORE', KEYS[4], ARGV[7]) then return {2, run} end
if field['cancel'] then
  redis.call('HSET', KEYS[1], 'status', 'canceled', 'ended_at', ARGV[4], 'error', ARGV[5])
  run_event(KEYS[3], KEYS[1], 'status', step, ARGV[6])
  webhook_due(KEYS[1], 'canceled', KEYS[6], KEYS[7])
  return {4, redis.call('HGETALL', KEYS[1])}
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
local t = redis.call('TIME')
redis.call('ZADD', KEYS[4], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2]), ARGV[7])
redis.call('HSET', KEYS[1], 'worker', ARGV[8])
if ARGV[10] ~= '' and not version then redis.call('HSET', KEYS[1], 'version', ARGV[10]) end
return {3, run}
