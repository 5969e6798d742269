-- Claim one fire of a schedule (K1): compare-and-set the schedule's state, record the fire in its history
-- and, when the fire starts a run, mark the run with the schedule. Staged by the scheduler in the MULTI that
-- also creates the run (graphq.scheduler.claim: the client's run creation, the state key WATCHed), so that the
-- claim and the run apply together or not at all. That WATCH is what makes each (schedule, fire time) start
-- one run: the check here only keeps the state and the history from being claimed twice (a 0 does not undo
-- the rest of its MULTI: a caller that did not WATCH would still create the run).
-- KEYS[1] = the schedule's state (string, JSON {cursor_ms, last_run, last_thread, buffered_ms})
-- KEYS[2] = its fire history (list, newest first); KEYS[3] = the run's hash (only with a run)
-- ARGV[1] = kind: 'next' (the state's cursor must be before the fire; it moves to the fire),
--           'buffered' (the fire must be the one kept waiting; it is no longer), 'manual' (no check)
-- ARGV[2] = fire time, ms since the epoch; ARGV[3] = the first cursor (a state not stored yet)
-- ARGV[4] = run id ('' = no run); ARGV[5] = the run's thread; ARGV[6] = '1': keep this fire waiting
-- ARGV[7] = history length kept; ARGV[8] = schedule name; ARGV[9] = fire time, ISO-8601
-- ARGV[10..] = history entries (JSON), oldest first
-- Returns 1 when claimed, 0 when the fire was claimed already (nothing written).
local raw = redis.call('GET', KEYS[1])
local state
if raw then state = cjson.decode(raw) else state = {cursor_ms = tonumber(ARGV[3])} end
local fire = tonumber(ARGV[2])
local kind = ARGV[1]
if kind == 'next' then
  if tonumber(state.cursor_ms) >= fire then return 0 end
  state.cursor_ms = fire
elseif kind == 'buffered' then
  if state.buffered_ms == nil or state.buffered_ms == cjson.null or tonumber(state.buffered_ms) ~= fire then
    return 0
  end
  state.buffered_ms = cjson.null
end
if ARGV[6] == '1' then state.buffered_ms = fire end
if ARGV[4] ~= '' then
  state.last_run = ARGV[4]
  state.last_thread = ARGV[5]
  redis.call('HSET', KEYS[3], 'schedule', ARGV[8], 'fire_time', ARGV[9])
end
redis.call('SET', KEYS[1], cjson.encode(state))
for i = 10, #ARGV do redis.call('LPUSH', KEYS[2], ARGV[i]) end
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[7]) - 1)
return 1
