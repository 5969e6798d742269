-- Fragment (not a script): a planned checkpoint write, shared by put_checkpoint.lua and commit_step.lua,
-- which take it in with the line `--#include plan` (graphcore/backend/lua/__init__.py, `source`).
-- write_plan(V, id, record) writes checkpoint `id`: its record into the checkpoint hash KEYS[3], its id onto
-- the history list KEYS[4], then the plan's two ARGV sections from ARGV[V] on, each a count first:
--   values  n × (key index, field, value)     appends  n × (key index, start, count, count × item)
-- (key indexes into KEYS). An append is valid only while its log holds exactly `start` items (the append
-- guard of graphcore/checkpoints/layout.py); when one is not, nothing is written.
-- Returns the ARGV index after the two sections, or nil when an append guard failed.
-- guards_hold(V) checks the append guards of the plan at ARGV[V] without writing; plan_end(V) is the ARGV
-- index after that plan's two sections (a commit writing two plans checks both before writing either).
local function appends_at(V)
  return V + 1 + 3 * tonumber(ARGV[V])  -- ARGV index of the appends count
end
local function guards_hold(V)
  local A = appends_at(V)
  local j = A + 1
  for _ = 1, tonumber(ARGV[A]) do
    if redis.call('LLEN', KEYS[tonumber(ARGV[j])]) ~= tonumber(ARGV[j + 1]) then return false end
    j = j + 3 + tonumber(ARGV[j + 2])
  end
  return true
end
local function plan_end(V)
  local A = appends_at(V)
  local j = A + 1
  for _ = 1, tonumber(ARGV[A]) do j = j + 3 + tonumber(ARGV[j + 2]) end
  return j
end
local function write_plan(V, id, record)
  if not guards_hold(V) then return nil end
  local A = appends_at(V)
  redis.call('HSET', KEYS[3], id, record)
  redis.call('RPUSH', KEYS[4], id)
  for i = V + 1, A - 1, 3 do redis.call('HSET', KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]) end
  local j = A + 1
  for _ = 1, tonumber(ARGV[A]) do
    local key, first, last = KEYS[tonumber(ARGV[j])], j + 3, j + 2 + tonumber(ARGV[j + 2])
    for c = first, last, 1000 do redis.call('RPUSH', key, unpack(ARGV, c, math.min(c + 999, last))) end
    j = last + 1
  end
  return j
end
