-- The fenced commit of one super-step (I1, R3): everything below happens only while the caller holds the
-- run's lease and the run is still at the expected step and not finished; otherwise nothing is written.
-- With flag 'J' it also enqueues the next step's RQ job (_enqueue.lua), so that a commit and the job of the
-- step after it are written together or not at all, in one call.
-- KEYS[1] run hash, KEYS[2] lease, KEYS[3] checkpoint hash, KEYS[4] history list, KEYS[5] events stream,
-- KEYS[6] pending-writes hash, KEYS[7] answers hash, KEYS[8] lease index, KEYS[9] the thread's key set,
-- KEYS[10] the retention index, KEYS[11] the thread's run set (K3), KEYS[12] the next step's RQ job hash,
-- KEYS[13] its RQ queue, KEYS[14] RQ's set of queues, KEYS[15] the index of unclaimed step jobs (KEYS[12..15]
-- are written only with flag 'J'), KEYS[16], KEYS[17] the webhook outbox and its due set (_webhook.lua:
-- a commit that ends its run adds the run's delivery), KEYS[18..] channel value hashes and log lists (by
-- index)
-- ARGV[1] lease token, ARGV[2] expected step, ARGV[3] checkpoint id, ARGV[4] checkpoint record,
-- ARGV[5] flags: 'L' drop the lease (and its entry in the lease index), 'W' drop pending writes and
-- answers, 'J' enqueue the next step's job, 'C' complete the run (never both), 'P' a checkpoint before this
-- one (a run's input checkpoint, written first); ARGV[6] the run's member of the lease index; ARGV[7] the
-- run's thread TTL in ms ('' = none), ARGV[8] the thread id; with 'P', ARGV[9] its id, ARGV[10] its record
-- and its plan's two sections; then sections, each a count first:
--   values  n × (key index, field, value)     appends  n × (key index, start, count, count × item)
--   run fields to set  n × (field, value)     run fields to delete  n × field
--   events n × (mode, step, data)
-- then, with flag 'J': the job's id, its member of KEYS[15], n × (field, value) of the job hash (a count
-- first); or, with flag 'C' (the commit completes the run): the step of its status event, the data of a
-- 'completed' status event, the data of a 'canceled' one, the cancel error record (JSON), ended_at. A cancel
-- acknowledged before this commit wins (X1): the run ends Canceled, its checkpoint kept, never Completed.
-- The plan's sections (values, appends) and their append guard are written by _plan.lua.
-- With a thread TTL (K3, _retain.lua) the keys written get the thread's expiry and join its key set, and
-- the whole thread is refreshed when its expiry is closer than half the TTL: no Redis call of its own.
-- Without one, a thread that has a TTL (from an earlier run) loses it: a run without a TTL keeps it (the
-- keys written still join the key set the thread had, so that a later run with a TTL expires them too).
-- Returns 'ok'; 'canceled' (flag 'C' and the run had a cancel request); 'again' when this very commit was
-- applied before (a retry after a reply lost in a Redis outage: the run's head is its checkpoint, or, when
-- the next step committed meanwhile, the checkpoint's record exists, which only this commit writes, or
-- without history the run's field 'pruned' names it: the next step's commit pruned it); or
-- why the commit was refused: 'lease', 'finished', 'step' (each counted in the run hash, field
-- 'refused:commit', I1), or 'log' (an append guard). A completing commit applied before whose run ended
-- Canceled answers 'canceled' again, not 'again' (its first verdict).
local run = redis.call('HMGET', KEYS[1], 'head', 'status', 'step')
if run[1] == ARGV[3] then
  if run[2] == 'canceled' and string.find(ARGV[5], 'C', 1, true) then return 'canceled' end
  return 'again'
end
local function refuse(why)
  if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HINCRBY', KEYS[1], 'refused:commit', 1) end
  return why
end
--#include fence
--#include terminal
if not holds(KEYS[2], ARGV[1]) then
  if redis.call('HEXISTS', KEYS[3], ARGV[3]) == 1 then return 'again' end  -- applied; the run moved on
  if redis.call('HGET', KEYS[1], 'pruned') == ARGV[3] then return 'again' end  -- and pruned it (R5)
  return refuse('lease')
end
local status = run[2]
if not status or finished(status) then return refuse('finished') end
if run[3] ~= ARGV[2] then return refuse('step') end
--#include plan
--#include retain
--#include events
--#include enqueue
--#include webhook
local V = 9
if string.find(ARGV[5], 'P', 1, true) then  -- both plans' guards hold, or nothing is written
  V = plan_end(11)
  if not (guards_hold(11) and guards_hold(V)) then return 'log' end
  write_plan(11, ARGV[9], ARGV[10])
end
local i = write_plan(V, ARGV[3], ARGV[4])
if not i then return 'log' end
local function count()
  local n = tonumber(ARGV[i]); i = i + 1; return n
end
local n = count()
if n > 0 then redis.call('HSET', KEYS[1], unpack(ARGV, i, i + 2 * n - 1)) end
i = i + 2 * n
n = count()
if n > 0 then redis.call('HDEL', KEYS[1], unpack(ARGV, i, i + n - 1)) end
i = i + n
for _ = 1, count() do xadd_event(KEYS[5], ARGV[i], ARGV[i + 1], ARGV[i + 2]); i = i + 3 end
if string.find(ARGV[5], 'L', 1, true) then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[8], ARGV[6])
end
if string.find(ARGV[5], 'W', 1, true) then
  redis.call('DEL', KEYS[6], KEYS[7])
  if ARGV[7] ~= '' then redis.call('SREM', KEYS[9], KEYS[6], KEYS[7]) end
end
if ARGV[7] ~= '' then
  if refresh_due(KEYS[9], tonumber(ARGV[7])) then
    for _, k in ipairs({KEYS[1], KEYS[3], KEYS[4], KEYS[5], unpack(KEYS, 18)}) do
      redis.call('SADD', KEYS[9], k)
    end
    refresh(KEYS[9], KEYS[10], KEYS[11], ARGV[8], tonumber(ARGV[7]))
  else
    retain_keys(KEYS[9], KEYS[1], KEYS[3], KEYS[4], KEYS[5], unpack(KEYS, 18))
  end
else
  forget(KEYS[9], KEYS[10], KEYS[11], ARGV[8])  -- a run without a TTL keeps its thread
  retain_keys(KEYS[9], KEYS[1], KEYS[3], KEYS[4], KEYS[5], unpack(KEYS, 18))  -- no set: one PTTL
end
if string.find(ARGV[5], 'J', 1, true) then
  local t = redis.call('TIME')
  local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local job_id, step_member, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local fields = {unpack(ARGV, i + 3, i + 2 + 2 * n)}
  enqueue_job(KEYS[12], KEYS[13], KEYS[14], KEYS[15], job_id, step_member, now_ms, fields)
  return 'ok'
end
if not string.find(ARGV[5], 'C', 1, true) then return 'ok' end
local verdict, data = 'completed', ARGV[i + 1]
if redis.call('HEXISTS', KEYS[1], 'cancel') == 1 then
  verdict, data = 'canceled', ARGV[i + 2]
  redis.call('HSET', KEYS[1], 'error', ARGV[i + 3])
end
redis.call('HSET', KEYS[1], 'status', verdict, 'ended_at', ARGV[i + 4])
xadd_event(KEYS[5], 'status', ARGV[i], data)
webhook_due(KEYS[1], verdict, KEYS[16], KEYS[17])
if verdict == 'canceled' then return 'canceled' end
return 'ok'
