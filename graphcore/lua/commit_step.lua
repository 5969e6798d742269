-- The fenced commit of one super-step (I1, R3): everything below happens only while the caller holds the
-- run's lease and the run is still at the expected step and not finished; otherwise nothing is written.
-- It runs inside the caller's MULTI, beside the enqueue of the next step's RQ job.
-- KEYS[1] run hash, KEYS[2] lease, KEYS[3] checkpoint hash, KEYS[4] history list, KEYS[5] events stream,
-- KEYS[6] pending-writes hash, KEYS[7] answers hash, KEYS[8..] channel value hashes and log lists (by index)
-- ARGV[1] lease token, ARGV[2] expected step, ARGV[3] checkpoint id, ARGV[4] checkpoint record,
-- ARGV[5] flags: 'L' drop the lease, 'W' drop pending writes and answers; then sections, each a count first:
--   hset   n × (key index, field, value)      rpush  n × (key index, item)
--   run fields to set  n × (field, value)     run fields to delete  n × field
--   events n × (mode, step, data)
-- Returns 'ok', or why the commit was refused: 'lease', 'finished' or 'step'.
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 'lease' end
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'completed' or status == 'failed' or status == 'canceled' then return 'finished' end
if redis.call('HGET', KEYS[1], 'step') ~= ARGV[2] then return 'step' end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
redis.call('RPUSH', KEYS[4], ARGV[3])
local i = 6
local function count()
  local n = tonumber(ARGV[i]); i = i + 1; return n
end
for _ = 1, count() do redis.call('HSET', KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]); i = i + 3 end
for _ = 1, count() do redis.call('RPUSH', KEYS[tonumber(ARGV[i])], ARGV[i + 1]); i = i + 2 end
for _ = 1, count() do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]); i = i + 2 end
for _ = 1, count() do redis.call('HDEL', KEYS[1], ARGV[i]); i = i + 1 end
for _ = 1, count() do
  redis.call('XADD', KEYS[5], '*', 'mode', ARGV[i], 'step', ARGV[i + 1], 'data', ARGV[i + 2]); i = i + 3
end
if string.find(ARGV[5], 'L', 1, true) then redis.call('DEL', KEYS[2]) end
if string.find(ARGV[5], 'W', 1, true) then redis.call('DEL', KEYS[6], KEYS[7]) end
return 'ok'
