-- Store one checkpoint outside a step's commit — the in-process executor and update_state (no fence), or a
-- subgraph running inside a step job (G7, fenced by the step's lease, I1): the record, its history entry,
-- its channel values and its log appends, all or nothing.
-- KEYS[1] lease key, KEYS[2] run hash (both unused without a fence), KEYS[3] checkpoint hash,
-- KEYS[4] history list, KEYS[5..] channel value hashes and log lists (by index)
-- ARGV[1] lease token ('' = no fence), ARGV[2] checkpoint id, ARGV[3] checkpoint record, then the plan's two
-- sections, each a count first (the same layout as in commit_step.lua):
--   values  n × (key index, field, value)     appends  n × (key index, start, count, count × item)
-- With a fence, a caller that no longer holds the lease writes nothing; the refusal is counted in the run
-- hash (field 'refused:subgraph'). An append is valid only while its log holds exactly `start` items (the
-- append guard of graphcore/checkpoints/layout.py); when one is not, nothing is written. A checkpoint
-- already stored is this write again (a retry after a reply lost in a Redis outage): nothing is written.
-- Returns 'ok', 'lease' (refused by the fence) or 'log' (an append guard failed).
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) ~= ARGV[1] then
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HINCRBY', KEYS[2], 'refused:subgraph', 1) end
  return 'lease'
end
if redis.call('HEXISTS', KEYS[3], ARGV[2]) == 1 then return 'ok' end
local V = 4                               -- ARGV index of the values count
local A = V + 1 + 3 * tonumber(ARGV[V])   -- ARGV index of the appends count
local function each_append(fn)
  local j = A + 1
  for _ = 1, tonumber(ARGV[A]) do
    local n = tonumber(ARGV[j + 2])
    if not fn(KEYS[tonumber(ARGV[j])], tonumber(ARGV[j + 1]), j + 3, n) then return false end
    j = j + 3 + n
  end
  return true
end
if not each_append(function(key, start) return redis.call('LLEN', key) == start end) then return 'log' end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('RPUSH', KEYS[4], ARGV[2])
for i = V + 1, A - 1, 3 do redis.call('HSET', KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]) end
each_append(function(key, _, first, n)
  for c = first, first + n - 1, 1000 do redis.call('RPUSH', key, unpack(ARGV, c, math.min(c + 999, first + n - 1))) end
  return true
end)
return 'ok'
