-- Count a split step's finished tasks and, when asked or at the last one, append a 'progress' event
-- {done, total} to the run's stream (C6), in one call: events of several workers never go back.
-- KEYS[1] = the split's hash (the batch's lease key); KEYS[2] = the run hash; KEYS[3] = its event stream
-- ARGV[1] = the batch's token; ARGV[2] = tasks just finished; ARGV[3] = '1' to append an event;
-- ARGV[4] = the event's step
-- Returns the tasks finished so far, or -1 when the batch is not the caller's (nothing written).
--#include events
--#include fence
if not holds(KEYS[1], ARGV[1]) then return -1 end
local done = redis.call('HINCRBY', KEYS[1], 'finished', ARGV[2])
local total = tonumber(redis.call('HGET', KEYS[1], 'tasks'))
if ARGV[3] == '1' or done >= total then
  -- graphcore.checkpoints.serde's payload: its format version (1), then one msgpack object
  run_event(KEYS[3], KEYS[2], 'progress', ARGV[4], string.char(1) .. cmsgpack.pack({done = done, total = total}))
end
return done
