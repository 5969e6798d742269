-- Store a completed run's result in its record, once (R5, R7): before the checkpoint it is read from goes
-- (no history kept, or checkpoints removed after completion). Only while the run is Completed with that
-- checkpoint as its head, and only when no result is stored yet.
-- KEYS[1] run hash
-- ARGV[1] the run's head checkpoint id; ARGV[2] the result (msgpack of the head's channel values)
-- Returns 1 when stored, 0 otherwise.
if redis.call('HGET', KEYS[1], 'status') ~= 'completed' or redis.call('HGET', KEYS[1], 'head') ~= ARGV[1] then
  return 0
end
return redis.call('HSETNX', KEYS[1], 'result', ARGV[2])
