-- Fragment (not a script): xadd_event(stream, mode, step, data) appends one run event (C6) to a run's
-- stream, capped at about 10000 entries (MAXLEN ~: Redis trims whole stream nodes, so a stream may hold
-- up to one node, 100 entries by default, more): graphcore.backend.events.EVENTS_MAXLEN, the documented
-- bound; the oldest events go first.
local function xadd_event(key, mode, step, data)
  return redis.call('XADD', key, 'MAXLEN', '~', 10000, '*', 'mode', mode, 'step', step, 'data', data)
end
-- inherit_expiry(key, from): a key just created (a run's first event makes its stream) takes the expiry of
-- `from` (its run record) when it has none and `from` has one: the thread's TTL (K3, _retain.lua).
local function inherit_expiry(key, from)
  if redis.call('PTTL', key) ~= -1 then return end
  local left = redis.call('PTTL', from)
  if left > 0 then redis.call('PEXPIRE', key, left) end
end
-- run_event(stream, run, mode, step, data): xadd_event, then inherit_expiry(stream, run).
local function run_event(key, run, mode, step, data)
  local id = xadd_event(key, mode, step, data)
  inherit_expiry(key, run)
  return id
end
