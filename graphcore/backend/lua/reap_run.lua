-- Act on one lapsed lease (R18, R14, R10), exactly once however many reapers race: the lease must still
-- be in the index with the deadline the caller read, past that deadline by Redis's clock, and its key gone;
-- the run must still be Queued (claimed, not yet marked Running) or Running. Otherwise nothing changes
-- besides dropping a stale index entry. Completed, failed, canceled and awaiting-input runs are left alone.
-- What happens to an interrupted run:
--   a cancel was requested      → Canceled (the cancel wins; no continuation)
--   its chain reached the limit → Failed (or ARGV[18]) with the limit error (ARGV[8])
--   mode 'resume'               → Failed (or ARGV[18]) with the WorkerLost error (or the shutdown error of
--                                 a step its worker gave up, ARGV[7]); a continuation run KEYS[6] is
--                                 created (same thread, workflow, input, config, tenant, schedule and
--                                 fire time, version and pinning, breakpoint mark: a step let past its breakpoint stays let
--                                 past it; its head and pending writes, continued_from_run_id,
--                                 attempt + 1) and made the
--                                 thread's active run
--   mode 'restart'              → the same run starts again from its beginning: Queued at step 0, no head,
--                                 attempt + 1, config ARGV[17] when given
-- Work that needs RQ (enqueue the step job, clean the abandoned job) or a WATCH (thread hand-over) is put in
-- the recovery set KEYS[10] in this script and done by the caller right after, idempotently.
-- KEYS[1] lease index; KEYS[2] lease key; KEYS[3] run hash; KEYS[4] run events; KEYS[5] thread's active
-- run; KEYS[6] continuation's run hash; KEYS[7] run index; KEYS[8] run → thread hash; KEYS[9] thread's
-- runs; KEYS[10] recovery set; KEYS[11] the runs holding an admission slot (R8): a continuation takes
-- over its predecessor's slot here (counts unchanged: same tenant and workflow), so that the slot is given
-- on exactly once; a restarted run keeps its own; a run closed here gives its slot back with its hand-over;
-- KEYS[12] the thread's key set and KEYS[13] the retention index (K3): a continuation or a restart is a
-- use of the thread: with a thread TTL (the run's thread_ttl_s) every key of the thread expires that TTL
-- from now (refresh, _retain.lua); a thread kept without one only registers the new run (events:
-- _events.lua, capped); KEYS[14], KEYS[15] the webhook outbox and its due set: a run closed Canceled or at
-- the limit adds its webhook delivery (_webhook.lua); a run closed because a continuation takes it over
-- adds none (the continuation keeps its webhook and delivers when the chain ends or pauses), nor a restart
-- ARGV[1] lease member; ARGV[2] its deadline as read (ms); ARGV[3] 'resume' or 'restart'; ARGV[4] max
-- resume attempts; ARGV[5] continuation run id; ARGV[6] now (ISO-8601); ARGV[7] WorkerLost error (JSON);
-- ARGV[8] limit error (JSON); ARGV[9] data of the 'failed' status event (msgpack); ARGV[10] data of the
-- limit's 'failed' event; ARGV[11] step of the events; ARGV[12] thread id; ARGV[13] run id; ARGV[14] data of
-- the restart's 'queued' event; ARGV[15] cancel error (JSON); ARGV[16] data of the 'canceled' event;
-- ARGV[17] the restarted run's config (JSON; '' keeps it); ARGV[18] the status the interrupted run is closed
-- with when it is not continued or is continued ('failed'; 'canceled' for a step given up at a shutdown);
-- ARGV[19] the continuation's member of KEYS[11]; ARGV[20] the run's 'handover' member of KEYS[10], ARGV[21]
-- its 'enqueue' member, ARGV[22] the continuation's 'enqueue' member (members built by graphcore.keys; only
-- the 'abandoned' one is built here, as it ends with the step read here)
-- Returns {verdict, detail}: 'fresh' (not lapsed), 'gone' (no such entry, or a newer deadline), 'held'
-- (a lease key exists), 'left' (run not interrupted; detail = its status), 'canceled', 'limit',
-- 'continued' (detail = the continuation's id), 'restarted'.
--#include events
--#include retain
--#include webhook
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return {'gone', ''} end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(score) > now_ms then return {'fresh', ''} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'held', ''} end
redis.call('ZREM', KEYS[1], ARGV[1])
local status = redis.call('HGET', KEYS[3], 'status')
if status ~= 'running' and status ~= 'queued' then return {'left', status or ''} end
local run_step = redis.call('HGET', KEYS[3], 'step')
local thread, run_id = ARGV[12], ARGV[13]
local function used()  -- the thread is used: refreshed when the run has a thread TTL (K3)
  local ttl_s = redis.call('HGET', KEYS[3], 'thread_ttl_s')
  if ttl_s and redis.call('PTTL', KEYS[12]) ~= -2 then
    refresh(KEYS[12], KEYS[13], KEYS[9], thread, math.floor(tonumber(ttl_s) * 1000))
    return true
  end
  return false
end
redis.call('ZADD', KEYS[10], now_ms, 'abandoned:' .. thread .. ':' .. run_id .. ':' .. run_step)
local function close(new_status, error_json, event)
  redis.call('HSET', KEYS[3], 'status', new_status, 'ended_at', ARGV[6], 'error', error_json)
  run_event(KEYS[4], KEYS[3], 'status', ARGV[11], event)
end
if redis.call('HEXISTS', KEYS[3], 'cancel') == 1 then
  close('canceled', ARGV[15], ARGV[16])
  webhook_due(KEYS[3], 'canceled', KEYS[14], KEYS[15])
  redis.call('ZADD', KEYS[10], now_ms, ARGV[20])
  return {'canceled', ''}
end
local attempt = tonumber(redis.call('HGET', KEYS[3], 'attempt') or '1')
if attempt - 1 >= tonumber(ARGV[4]) then
  close(ARGV[18], ARGV[8], ARGV[10])
  webhook_due(KEYS[3], ARGV[18], KEYS[14], KEYS[15])
  redis.call('ZADD', KEYS[10], now_ms, ARGV[20])
  return {'limit', ''}
end
if ARGV[3] == 'restart' then
  redis.call('HSET', KEYS[3], 'status', 'queued', 'step', '0', 'attempt', tostring(attempt + 1),
    'interrupted', ARGV[7])
  redis.call('HDEL', KEYS[3], 'head', 'partial', 'worker')
  if ARGV[17] ~= '' then redis.call('HSET', KEYS[3], 'config', ARGV[17]) end
  run_event(KEYS[4], KEYS[3], 'status', ARGV[11], ARGV[14])
  used()
  redis.call('ZADD', KEYS[10], now_ms, ARGV[21])
  return {'restarted', ''}
end
local new_id = ARGV[5]
close(ARGV[18], ARGV[7], ARGV[9])
redis.call('HSET', KEYS[3], 'continued_by_run_id', new_id)
local fields = {'id', new_id, 'status', 'queued', 'step', '0', 'created_at', ARGV[6],
  'continued_from_run_id', run_id, 'attempt', tostring(attempt + 1)}
for _, name in ipairs({'workflow', 'thread_id', 'tenant', 'input', 'config', 'preset_answers', 'head',
    'partial', 'run_timeout_s', 'thread_ttl_s', 'schedule', 'fire_time', 'breakpoint', 'version', 'pinned',
    'webhook'}) do
  local value = redis.call('HGET', KEYS[3], name)
  if value then fields[#fields + 1] = name; fields[#fields + 1] = value end
end
redis.call('HSET', KEYS[6], unpack(fields))
inherit_expiry(KEYS[6], KEYS[3])
if redis.call('PTTL', KEYS[12]) ~= -2 then redis.call('SADD', KEYS[12], KEYS[6]) end  -- a kept set too
local now_s = now_ms / 1000
redis.call('ZADD', KEYS[7], now_s, new_id)
redis.call('HSET', KEYS[8], new_id, thread)
redis.call('ZADD', KEYS[9], now_s, new_id)
if not used() then
  local until_ms = redis.call('ZSCORE', KEYS[13], thread)
  if until_ms then redis.call('ZADD', KEYS[13], until_ms, thread .. ':' .. new_id) end
end
if redis.call('GET', KEYS[5]) == run_id then redis.call('SET', KEYS[5], new_id, 'KEEPTTL') end
local slot = redis.call('HGET', KEYS[11], ARGV[1])
if slot then
  redis.call('HDEL', KEYS[11], ARGV[1])
  redis.call('HSET', KEYS[11], ARGV[19], slot)
end
redis.call('ZADD', KEYS[10], now_ms, ARGV[22])
return {'continued', new_id}
