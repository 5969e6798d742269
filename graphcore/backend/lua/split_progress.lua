-- Announce a split step's progress (C6): {done, total}, done the step's tasks whose writes are persisted
-- (the fields of its pending writes, so tasks a batch finished before its worker died count too), appended
-- as a 'progress' event to the stream of the run that owns the split ('run': a continuation that joined it
-- took it over) when more than the last one announced ('finished'): events of several workers never go
-- back, none repeats, and the step's last task's is {total, total}. None once that run has ended (its
-- continuation's first event will count them).
-- KEYS[1] = the split's hash (the batch's lease key); KEYS[2] = the run hash and KEYS[3] its event stream,
-- of the run ARGV[3]; KEYS[4] = the step's pending writes
-- ARGV[1] = the batch's token; ARGV[2] = the event's step; ARGV[3] = the run the caller read from the
-- split's 'run'
-- Returns the step's tasks done; -1 when the batch is not the caller's (nothing written); -2 when the split
-- is another run's now (nothing written: read 'run' again).
--#include events
--#include fence
--#include terminal
if not holds(KEYS[1], ARGV[1]) then return -1 end
if redis.call('HGET', KEYS[1], 'run') ~= ARGV[3] then return -2 end
local total = tonumber(redis.call('HGET', KEYS[1], 'tasks'))
local done = math.min(redis.call('HLEN', KEYS[4]), total)
if finished(redis.call('HGET', KEYS[2], 'status')) then return done end
if done > tonumber(redis.call('HGET', KEYS[1], 'finished')) then
  redis.call('HSET', KEYS[1], 'finished', done)
  -- graphcore.checkpoints.serde's payload: its format version (1), then one msgpack map of two entries,
  -- done then total (as the step's other progress events: a Lua table's keys have no order)
  local map = string.char(0x82) .. cmsgpack.pack('done') .. cmsgpack.pack(done) .. cmsgpack.pack('total')
  run_event(KEYS[3], KEYS[2], 'progress', ARGV[2], string.char(1) .. map .. cmsgpack.pack(total))
end
return done
